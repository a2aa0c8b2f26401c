// Package secretsync copies the cluster's encryption key from the hub to the
// managed cluster, so that the agent can decrypt the values hub templates
// encrypted with "protect" ($ocm_encrypted:...), as OCM's
// governance-policy-framework-addon does (controllers/secretsync).
//
// It reconciles one object: Secret templating.EncryptionKeySecret
// (policy-encryption-key) in the cluster namespace on the hub, which the hub
// creates. The copy has the same name, in the same-named namespace on the
// managed cluster, and the same type and data (fields "key" and
// "previousKey"); it is created, updated and deleted to match, and carries
// app.kubernetes.io/managed-by=canopy. Only a copy carrying that label is
// deleted when the hub's Secret goes: a Secret someone made by hand is left
// alone. The hub's labels and annotations are not copied.
//
// Both sides are read through caches restricted to that one Secret (field
// selector metadata.name=policy-encryption-key in the cluster namespace:
// KeyOnly), so the agent's hub identity needs read access to that Secret
// alone (pkg/hubrbac grants it by resourceNames) and no other Secret
// of either cluster is ever listed or held in memory.
//
// Note: the key is a credential. Nothing here logs, records or returns a
// Secret's data; log lines name the Secret only.
package secretsync
