// Package hubrbac defines the hub permissions of a managed cluster's
// Canopy agent, and builds the Role and RoleBinding that grant them.
//
// The agent talks to the hub only about its own cluster: it reads the
// replicated policies in its cluster namespace, writes their status, records
// compliance events there, holds a lease there so the hub sees its health,
// and reads its cluster's encryption key (the one Secret
// policy-encryption-key) there. Rules lists exactly that, and Role scopes it
// to one namespace, so a compromised agent cannot read or change another
// cluster's policies or key, the root policies, any other Secret, or any
// cluster-scoped object on the hub.
//
// The same objects are used by internal/test/testenv (client-certificate and
// ServiceAccount identities) and by the hub's OCM addon permission hook
// (the identity registered through the CSR flow).
package hubrbac
