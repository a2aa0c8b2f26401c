package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// Relation is what an edge of a dependency Graph means.
type Relation string

const (
	// RelationDependency links a policy to what its spec.dependencies name,
	// which gates every one of its templates.
	RelationDependency Relation = "dependency"
	// RelationTemplate links a policy to a template it delivers.
	RelationTemplate Relation = "template"
	// RelationExtraDependency links a template to what its
	// extraDependencies name, which gates that template only.
	RelationExtraDependency Relation = "extraDependency"
	// RelationMember links a PolicySet to a member policy (a dependency on
	// a PolicySet is one on each member).
	RelationMember Relation = "member"
)

// GraphNode is a vertex of a dependency Graph: a root Policy, a PolicySet,
// a policy template, or another object a dependency names.
type GraphNode struct {
	// ID identifies the node in the graph.
	ID string `json:"id"`
	// Kind is Policy, PolicySet, the template's kind, or the kind a
	// dependency names.
	Kind string `json:"kind"`
	// Namespace is the object's namespace on the hub (Policy, PolicySet),
	// the dependency's namespace for other objects, empty for templates.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
	// Policy is the policy that delivers a template node.
	Policy *PolicyRef `json:"policy,omitempty"`
	// State is the node's compliance when known: a Policy's or PolicySet's
	// status.compliant, a template's worst state over the clusters.
	State policyv1.ComplianceState `json:"compliant,omitempty"`
	// Missing is true for a Policy or PolicySet that is not on the hub.
	Missing bool `json:"missing,omitempty"`
	// Reason is why the node is not Compliant, in one line: "not found"
	// for a missing Policy or PolicySet, a root policy's first reason on
	// its first cluster that is not Compliant (FirstReason).
	Reason string `json:"reason,omitempty"`
}

// Label returns the node as users read it: "Policy ns/name",
// "ConfigurationPolicy name" (templates), "Namespace name".
func (n GraphNode) Label() string {
	if n.Namespace != "" {
		return n.Kind + " " + n.Namespace + "/" + n.Name
	}
	return n.Kind + " " + n.Name
}

// GraphEdge is a directed edge of a dependency Graph, from the dependant
// to what it waits for or contains.
type GraphEdge struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Relation Relation `json:"relation"`
	// Compliance is the required compliance of a dependency (empty for
	// templates and members).
	Compliance policyv1.ComplianceState `json:"compliance,omitempty"`
	// Met is true for a dependency whose target is in the required
	// state now, the one rule every view draws and prints (DependencyMet).
	Met bool `json:"met,omitempty"`
	// Reason is why a dependency is not met: "not found", "no
	// status.compliant" or "want X got Y"; empty when met and for
	// templates and members.
	Reason string `json:"reason,omitempty"`
}

// Graph is the dependency graph reachable from one root policy.
type Graph struct {
	// Root is the ID of the root policy's node.
	Root string `json:"root"`
	// Nodes are in the order they were reached (depth first, spec order).
	Nodes []GraphNode `json:"nodes"`
	// Edges are in spec order per node.
	Edges []GraphEdge `json:"edges"`
}

// Inventory is what a dependency Graph is built from: the hub's Policies
// (roots, and replicas for the templates' states) and PolicySets.
type Inventory struct {
	Policies   []policyv1.Policy
	PolicySets []policyv1beta1.PolicySet
}

// ErrPolicyNotFound is returned when the policy asked for is not in the
// Inventory.
var ErrPolicyNotFound = errors.New("policy not found")

// BuildGraph returns the dependency graph of root, a root policy or else a
// PolicySet: its dependencies, its templates and their extra dependencies,
// followed through the Policies and PolicySets they name, in any
// namespace; each edge says whether it is met and each node why it is not
// Compliant, so that every view renders the same judgement.
func BuildGraph(root PolicyRef, inv Inventory) (Graph, error) {
	b := newGraphBuilder(inv)
	switch _, policy := b.policies[root]; {
	case policy:
		b.g.Root = b.addPolicy(root)
	case b.sets[root] != nil:
		b.g.Root = b.addPolicySet(root)
	default:
		return Graph{}, fmt.Errorf("%w: %s", ErrPolicyNotFound, root)
	}
	b.judge(inv)
	return b.g, nil
}

// judge sets every edge's Met and Reason and every node's Reason.
func (b *graphBuilder) judge(inv Inventory) {
	nodes := map[string]*GraphNode{}
	for i := range b.g.Nodes {
		nodes[b.g.Nodes[i].ID] = &b.g.Nodes[i]
	}
	roots, replicas := splitInventory(inv)
	for _, n := range nodes {
		switch {
		case n.Missing:
			n.Reason = "not found"
		case n.Kind == policyv1.PolicyKind && n.Policy == nil && n.State != policyv1.Compliant:
			n.Reason = rootReason(roots[PolicyRef{Namespace: n.Namespace, Name: n.Name}], replicas)
		}
	}
	for i := range b.g.Edges {
		e := &b.g.Edges[i]
		if e.Compliance == "" {
			continue
		}
		to := nodes[e.To]
		if to.Policy == nil && to.Kind != policyv1.PolicyKind && to.Kind != policyv1beta1.PolicySetKind {
			e.Reason = "judged on each managed cluster" // an object the hub does not see
			continue
		}
		e.Met, e.Reason = DependencyMet(e.Compliance, to.State, to.Missing)
	}
}

// DependencyMet is the rule for a dependency that wants want of a target
// in state got (missing when the target is not there): met, or why not.
func DependencyMet(want, got policyv1.ComplianceState, missing bool) (bool, string) {
	switch {
	case missing:
		return false, "not found"
	case got == "":
		return false, "no status.compliant"
	case got != want:
		return false, "want " + string(want) + " got " + string(got)
	}
	return true, ""
}

// rootReason is the first reason of root on its first cluster (by name)
// where it is not Compliant, prefixed with the cluster; "" when none.
func rootReason(root *policyv1.Policy, replicas map[string][]policyv1.Policy) string {
	if root == nil {
		return ""
	}
	for _, c := range Explain(root, replicas[replica.Name(root)], ExplainOptions{}).Clusters {
		if c.Compliant != policyv1.Compliant {
			if r := FirstReason(c); r != "" {
				return c.Cluster + ": " + r
			}
		}
	}
	return ""
}

// templateKey names a template of a root policy.
type templateKey struct {
	policy     PolicyRef
	kind, name string
}

type graphBuilder struct {
	policies map[PolicyRef]*policyv1.Policy
	sets     map[PolicyRef]*policyv1beta1.PolicySet
	states   map[PolicyRef]map[string][]policyv1.ComplianceState // template states per cluster
	owners   map[[2]string][]PolicyRef                           // kind, name → policies delivering it
	seen     map[string]bool
	g        Graph
}

func newGraphBuilder(inv Inventory) *graphBuilder {
	b := &graphBuilder{policies: map[PolicyRef]*policyv1.Policy{}, sets: map[PolicyRef]*policyv1beta1.PolicySet{},
		states: map[PolicyRef]map[string][]policyv1.ComplianceState{}, owners: map[[2]string][]PolicyRef{},
		seen: map[string]bool{}, g: Graph{Nodes: []GraphNode{}, Edges: []GraphEdge{}}}
	for i := range inv.PolicySets {
		s := &inv.PolicySets[i]
		b.sets[PolicyRef{Namespace: s.Namespace, Name: s.Name}] = s
	}
	for i := range inv.Policies {
		p := &inv.Policies[i]
		if label, ok := p.Labels[policyv1.RootPolicyLabel]; ok {
			b.addReplica(label, p)
			continue
		}
		ref := PolicyRef{Namespace: p.Namespace, Name: p.Name}
		b.policies[ref] = p
		for _, t := range p.Spec.PolicyTemplates {
			kind, name := t.KindAndName()
			b.owners[[2]string{kind, name}] = append(b.owners[[2]string{kind, name}], ref)
		}
	}
	for k := range b.owners {
		slices.SortFunc(b.owners[k], comparePolicyRefs)
	}
	return b
}

func (b *graphBuilder) addReplica(label string, p *policyv1.Policy) {
	key, ok := replica.RootOf(label)
	if !ok {
		return
	}
	ref := PolicyRef{Namespace: key.Namespace, Name: key.Name}
	if b.states[ref] == nil {
		b.states[ref] = map[string][]policyv1.ComplianceState{}
	}
	for _, d := range p.Status.Details {
		b.states[ref][d.TemplateMeta.Name] = append(b.states[ref][d.TemplateMeta.Name], d.ComplianceState)
	}
}

func comparePolicyRefs(a, b PolicyRef) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// node adds n unless its ID is already there, and reports whether it was
// new.
func (b *graphBuilder) node(n GraphNode) bool {
	if b.seen[n.ID] {
		return false
	}
	b.seen[n.ID] = true
	b.g.Nodes = append(b.g.Nodes, n)
	return true
}

func (b *graphBuilder) edge(from, to string, rel Relation, want policyv1.ComplianceState) {
	b.g.Edges = append(b.g.Edges, GraphEdge{From: from, To: to, Relation: rel, Compliance: want})
}

// edgeTo adds an edge from from to the node that add adds, keeping the
// edge before those add adds on the way, so that edges are in spec order.
func (b *graphBuilder) edgeTo(from string, rel Relation, want policyv1.ComplianceState, add func() string) {
	i := len(b.g.Edges)
	b.edge(from, "", rel, want)
	b.g.Edges[i].To = add()
}

func policyID(ref PolicyRef) string    { return "Policy/" + ref.String() }
func policySetID(ref PolicyRef) string { return "PolicySet/" + ref.String() }
func templateID(k templateKey) string  { return policyID(k.policy) + "/" + k.kind + "/" + k.name }

// addPolicy adds the policy ref and, the first time, what it depends on
// and delivers; it returns the node's ID.
func (b *graphBuilder) addPolicy(ref PolicyRef) string {
	id := policyID(ref)
	p, found := b.policies[ref]
	n := GraphNode{ID: id, Kind: policyv1.PolicyKind, Namespace: ref.Namespace, Name: ref.Name, Missing: !found}
	if found {
		n.State = p.Status.ComplianceState
	}
	if !b.node(n) || !found {
		return id
	}
	b.addDependencies(id, ref.Namespace, p.Spec.Dependencies, RelationDependency)
	for _, t := range p.Spec.PolicyTemplates {
		kind, name := t.KindAndName()
		tid := b.addTemplate(templateKey{policy: ref, kind: kind, name: name})
		b.edge(id, tid, RelationTemplate, "")
		b.addDependencies(tid, ref.Namespace, t.ExtraDependencies, RelationExtraDependency)
	}
	return id
}

func (b *graphBuilder) addTemplate(k templateKey) string {
	id := templateID(k)
	policy := k.policy
	b.node(GraphNode{ID: id, Kind: k.kind, Name: k.name, Policy: &policy,
		State: compliance.Aggregate(b.states[k.policy][k.name]...)})
	return id
}

// addDependencies adds an edge from id to each dependency of deps, which
// belong to an object of namespace.
func (b *graphBuilder) addDependencies(id, namespace string, deps []policyv1.PolicyDependency, rel Relation) {
	// Note: CanonicalDependencies with no PolicySet members names Policies
	// as replicas do ("<namespace>.<name>") and keeps PolicySets.
	for _, d := range replica.CanonicalDependencies(deps, namespace, nil) {
		b.edgeTo(id, rel, d.Compliance, func() string { return b.addTarget(d, namespace) })
	}
}

// addTarget adds the object a canonical dependency names.
func (b *graphBuilder) addTarget(d policyv1.PolicyDependency, namespace string) string {
	ref := PolicyRef{Namespace: cmp.Or(d.Namespace, namespace), Name: d.Name}
	switch d.Kind {
	case policyv1.PolicyKind:
		if obj := ParseObjectRef(d.Kind + " " + d.Name); obj.Policy != nil {
			ref = *obj.Policy
		}
		return b.addPolicy(ref)
	case policyv1beta1.PolicySetKind:
		return b.addPolicySet(ref)
	}
	if owners := b.owners[[2]string{d.Kind, d.Name}]; len(owners) > 0 {
		owner := owners[0]
		if i := slices.IndexFunc(owners, func(o PolicyRef) bool { return o.Namespace == namespace }); i >= 0 {
			owner = owners[i]
		}
		b.addPolicy(owner)
		return templateID(templateKey{policy: owner, kind: d.Kind, name: d.Name})
	}
	id := d.Kind + "/" + d.Namespace + "/" + d.Name
	b.node(GraphNode{ID: id, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name})
	return id
}

func (b *graphBuilder) addPolicySet(ref PolicyRef) string {
	id := policySetID(ref)
	s, found := b.sets[ref]
	n := GraphNode{ID: id, Kind: policyv1beta1.PolicySetKind, Namespace: ref.Namespace, Name: ref.Name, Missing: !found}
	if found {
		n.State = s.Status.ComplianceState
	}
	if !b.node(n) || !found {
		return id
	}
	for _, m := range s.Spec.Policies {
		b.edgeTo(id, RelationMember, "", func() string {
			return b.addPolicy(PolicyRef{Namespace: ref.Namespace, Name: string(m)})
		})
	}
	return id
}
