// Package security tests Canopy's security promises against real API
// servers with the controllers running:
//
//   - an agent's hub identity (the Role the addon's permission hook grants,
//     and testenv's stand-in identity) reaches its own cluster namespace
//     only: never another cluster's, never a root policy (SubjectAccessReview
//     and real requests);
//   - no Secret value appears in any log, event or status, when policies
//     compare, enforce or propagate Secrets;
//   - the agent evaluates policy templates only in its cluster namespace and
//     OCM's open-cluster-management-policies: one created elsewhere is never
//     enforced with the agent's rights;
//   - the agent works with its minimal ClusterRole (deploy/spoke/rbac) and a
//     narrowed enforcement ClusterRole, and a template writing beyond it
//     is NonCompliant with the API server's Forbidden message.
package security
