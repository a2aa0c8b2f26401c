// Package vet checks Canopy manifests offline, without a cluster: Policies,
// PlacementBindings, PolicySets, ConfigurationPolicies and
// HierarchyPolicies (standalone, or inline in a Policy's policy-templates)
// and SubNamespaces.
//
// The checks, each a pure function over parsed documents:
//
//   - schema: the object is validated against the OpenAPI schema of its
//     CustomResourceDefinition (deploy/crds), with the API server's own
//     structural validation, unknown-field pruning and CEL rules;
//   - name-length: a root Policy's namespace + "." + name must fit in a
//     63-character label value (the admission policy of deploy/crds);
//   - dependency-cycle: dependencies between the policies and templates
//     of one namespace, with templatesync's graph;
//   - hierarchy: a HierarchyPolicy's tree as the syncer validates it
//     (cycles, missing parents, duplicate objects), and cycles of
//     SubNamespaces;
//   - collision: two documents of the same kind, namespace and name, or two
//     templates of the same kind and name in one Policy.
//
// Every Finding carries the file and line of the document or field it is
// about: documents are parsed with a YAML node parser that keeps positions.
package vet
