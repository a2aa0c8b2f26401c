// Package vet checks Canopy manifests offline, without a cluster: Policies,
// PlacementBindings, PolicySets, ConfigurationPolicies and
// HierarchyPolicies (standalone, or inline in a Policy's policy-templates)
// and SubNamespaces, with their Go templates.
//
// The checks, each a pure function over parsed documents:
//
//   - schema: the object is validated against the OpenAPI schema of its
//     CustomResourceDefinition (deploy/crds), with the API server's own
//     structural validation, unknown-field pruning and CEL rules;
//   - name-length: a root Policy's namespace + "." + name must fit in a
//     63-character label value (the admission policy of deploy/crds);
//   - dependency-cycle: dependencies between the policies and templates
//     of one namespace, with the graph templatesync uses (pkg/depgraph);
//   - hierarchy: a HierarchyPolicy's tree as the syncer validates it
//     (pkg/hierarchy)
//     (cycles, missing parents, duplicate objects), and cycles of
//     SubNamespaces;
//   - collision: two documents of the same kind, namespace and name, or two
//     templates of the same kind and name in one Policy;
//   - template: every Go template is parsed as the resolver that reads it
//     would (pkg/templating's Resolver: delimiters and the function names
//     of go-template-utils): hub templates ("{{hub ... hub}}") in each
//     policy template of a Policy; managed templates ("{{ }}") in a
//     ConfigurationPolicy's object-templates, object-templates-raw (no
//     context, no skipObject) and customMessage (sprig functions only).
//     Syntax errors and unknown functions are errors at the line of the
//     template in the file (a block scalar's own lines counted); so are
//     context fields the resolver does not set (.ObjectName in a hub
//     template, .ManagedClusterName in a managed one), protect outside hub
//     templates, hub lookups in another namespace than the policy's, and
//     cluster functions (fromClusterClaim, ...) in hub templates, which
//     read the hub (a warning when spec.hubTemplateOptions lends a
//     ServiceAccount). Hub templates outside a Policy are errors; managed
//     templates where nothing resolves them (other ConfigurationPolicy
//     fields, HierarchyPolicies) are warnings. Each string is parsed alone
//     for its position and each unit (an objectDefinition) whole, as the
//     library does after converting it to YAML: a template spanning
//     strings is fine, and one that fails only once converted is still
//     reported. The disable-templates annotation turns the check off;
//   - unsupported (warnings): policy templates of a kind Canopy's agent
//     does not evaluate (pkg/templatekinds: the same list the agent names
//     when it reports such a template NonCompliant; Gatekeeper's
//     constraints and ConstraintTemplates are supported), other kinds of OCM's
//     policy group (PolicyAutomation, IamPolicy, ...), and PlacementBindings
//     to a PlacementRule;
//   - name: names and namespaces the API server would refuse, of every
//     document and policy template and of the objects of object-templates:
//     DNS-1123 subdomains (labels for namespaces and Namespaces, DNS-1035
//     labels for Services, path segments for RBAC kinds). Names holding a
//     template are checked once resolved, on the cluster; so are schema
//     errors on a value holding one.
//
// Every Finding carries the file and line of the document or field it is
// about: documents are parsed with a YAML node parser that keeps positions.
package vet
