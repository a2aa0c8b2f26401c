// Package certpolicy evaluates CertificatePolicy objects on the managed
// cluster, with the semantics and messages of OCM's cert-policy-controller,
// so that existing policies apply unchanged.
//
// It reconciles CertificatePolicy (policy.open-cluster-management.io/v1)
// and is the only writer of its status: compliant and compliancyDetails
// (per selected namespace: the count and list of non-compliant
// certificates, and OCM's "Found 1 non compliant certificates in the
// namespace ..." message). It records compliance events on the parent
// Policy through pkg/compliance, one per change, with OCM's parent event
// text ("1 certificates expire in less than 672h0m0s: ns:secret").
//
// The certificates are the Secrets of type kubernetes.io/tls in the
// namespaces spec.namespaceSelector chooses (include and exclude globs, a
// label selector), restricted by spec.labelSelector. The first certificate
// of the Secret's tls.crt (or of the key its certificate_key_name label
// names) is checked: time left against minimumDuration (672h by default,
// as in OCM) or, for a CA, minimumCADuration; validity against
// maximumDuration or maximumCADuration; DNS names against
// allowedSANPattern and disallowedSANPattern. Checking is a pure function
// (evaluate.go) over what the reconciler read.
//
// Secrets are read from the API server, never cached (their data stays
// out of memory between evaluations), and polled rather than watched: a
// policy is evaluated again every ResyncInterval (a minute by default), when
// it or a Namespace changes, and when the next certificate compliant now
// crosses its minimum duration (its compliance changes with time alone).
// Reading Secrets needs the enforcement ClusterRole, like everything a
// policy checks. A steady policy writes no status: findings that differ
// only in the time left are the same findings. Secret contents never reach
// a log, an event or the status: only Secret and certificate names,
// durations, the CA flag and DNS names, as OCM reports them.
//
// A CertificatePolicy only informs; remediationAction enforce is accepted
// and changes nothing, as in OCM.
package certpolicy
