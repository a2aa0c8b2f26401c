package faults

import (
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// expectConverged waits until the cluster is in the declared state: every
// namespace of the tree holds exactly its declared ConfigMaps, the declared
// ClusterRole exists, the chain's templates exist and are Compliant, every
// replica on the hub is Compliant, and every bystander is still there.
func (f *killFixture) expectConverged() {
	g := NewWithT(f.t)
	ctx := f.t.Context()
	c := f.mc.Client
	g.Eventually(func(g Gomega) {
		for _, ns := range f.tree.namespaces() {
			cms := &corev1.ConfigMapList{}
			g.Expect(c.List(ctx, cms, client.InNamespace(ns))).To(Succeed())
			got := map[string]map[string]string{}
			for _, cm := range cms.Items {
				got[cm.Name] = cm.Data
			}
			g.Expect(got).To(Equal(f.tree.declared[ns]), "ConfigMaps of namespace %s", ns)
		}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: f.tree.clusterRole}, &rbacv1.ClusterRole{})).To(Succeed())
		for i := 1; i <= chainSteps; i++ {
			cp := &policyv1.ConfigurationPolicy{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: killCluster, Name: step(i)}, cp)).To(Succeed())
			g.Expect(cp.Status.ComplianceState).To(Equal(policyv1.Compliant), step(i))
		}
		for _, name := range []string{"tree", "gate", "chain"} {
			p := &policyv1.Policy{}
			g.Expect(f.env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: killCluster, Name: name}, p)).To(Succeed())
			g.Expect(p.Status.ComplianceState).To(Equal(policyv1.Compliant), "replica %s on the hub", name)
		}
	}).Should(Succeed(), "convergence after %d kills", f.agent.runs-1)
	for _, obj := range f.bystanders() {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed(), "bystander %T %s", obj, obj.GetName())
	}
	f.t.Logf("converged: %d namespaces, %d hand-made ConfigMaps removed", len(f.tree.declared), len(f.intruders))
}

// deletion is a successful deletion by the agent, from the audit log.
type deletion struct {
	resource, namespace, name string
}

func (d deletion) String() string { return fmt.Sprintf("%s %s/%s", d.resource, d.namespace, d.name) }

// agentDeletions returns every request of the agent's user that deleted
// something, or may have, from the managed API server's audit log; writes
// counts its requests that succeeded.
func agentDeletions(g Gomega, cp *controlplane.ControlPlane) (dels []deletion, writes int) {
	events, err := cp.ReadAuditLog()
	g.Expect(err).NotTo(HaveOccurred())
	for _, ev := range events {
		if ev.User.Username != agentUser || ev.ObjectRef == nil {
			continue
		}
		if ev.Succeeded() {
			writes++
		}
		if (ev.Verb != "delete" && ev.Verb != "deletecollection") || !mayHaveDeleted(&ev) {
			continue
		}
		d := deletion{resource: ev.ObjectRef.Resource, namespace: ev.ObjectRef.Namespace, name: ev.ObjectRef.Name}
		if ev.Verb == "deletecollection" {
			d.name = "*"
		}
		dels = append(dels, d)
	}
	return dels, writes
}

// mayHaveDeleted reports whether a delete request may have deleted its
// object: it succeeded, or it ended without a status or with a server error.
// Note: a request whose client is SIGKILLed is answered with an error (the
// request's context is cancelled) while the API server's storage goes on
// and commits the deletion; such a deletion is checked like any other.
func mayHaveDeleted(ev *controlplane.AuditEvent) bool {
	return ev.Succeeded() || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 500
}

// expectDeletionsGuaranteed checks every deletion the agent made against
// the guarantee tables: in the tree's namespaces, only ConfigMaps (the
// managed kind) that are not declared; in the cluster namespace, only a
// chain template whose dependency was unmet since it was created. It also
// checks that every hand-made ConfigMap was deleted, which shows that the
// audit log sees the agent's deletions.
func (f *killFixture) expectDeletionsGuaranteed() {
	g := NewWithT(f.t)
	dels, writes := agentDeletions(g, f.mc.ControlPlane)
	violations, deleted, templates := classifyDeletions(dels, f.tree.declared)
	f.t.Logf("audit: the agent made %d writes, %d of them deletions (%d of chain templates)", writes, len(dels), sum(templates))
	g.Expect(violations).To(BeEmpty(), "deletions outside the guarantee tables")
	for _, key := range f.intruders {
		g.Expect(deleted).To(HaveKey(key), "the hand-made ConfigMap %s must be deleted by the agent; the audit log's requests on it: %s",
			key, f.auditOf("configmaps", key))
	}
	g.Expect(f.templateDeletions()).To(Equal(templates), "the template deletions watched are the agent's")
}

// classifyDeletions sorts the agent's deletions by the guarantee that
// allows them: undeclared ConfigMaps in the tree's namespaces (declared
// maps each to its declared ConfigMaps), and chain templates in the cluster
// namespace, counted by name; anything else is a violation.
func classifyDeletions(dels []deletion, declared map[string]map[string]map[string]string) (
	violations []string, configMaps map[client.ObjectKey]bool, templates map[string]int,
) {
	configMaps, templates = map[client.ObjectKey]bool{}, map[string]int{}
	for _, d := range dels {
		switch {
		case d.name == "*": // a collection may hold declared objects
			violations = append(violations, d.String())
		case d.resource == "configmaps" && declared[d.namespace] != nil && declared[d.namespace][d.name] == nil:
			configMaps[client.ObjectKey{Namespace: d.namespace, Name: d.name}] = true
		case d.resource == "configurationpolicies" && d.namespace == killCluster && chainDependencies(d.name) != nil:
			templates[d.name]++
		default:
			violations = append(violations, d.String())
		}
	}
	return violations, configMaps, templates
}

// templateDeletions checks, from the recorded history, that each deletion
// of a chain template happened after one of its dependencies was unmet
// since the template was created, and counts them by name. Note: the audit
// log has no revision for deletions of custom resources (the response is a
// Status), so the watched deletions, which have one, are checked instead,
// and matched in number with the agent's deletions in the audit log.
func (f *killFixture) templateDeletions() map[string]int {
	changes := f.history.snapshot()
	counts := map[string]int{}
	var unjustified []string
	for _, c := range changes {
		if c.kind != "ConfigurationPolicy" || c.event != watch.Deleted {
			continue
		}
		counts[c.name]++
		if !templateDeletionJustified(changes, c) {
			unjustified = append(unjustified, fmt.Sprintf("%s@%d", c.name, c.rv))
		}
	}
	NewWithT(f.t).Expect(unjustified).To(BeEmpty(), "templates deleted while their dependencies were met")
	return counts
}

// templateDeletionJustified reports whether a dependency of the chain's
// template was unmet at some revision between its last creation and its
// deletion d.
func templateDeletionJustified(changes []change, d change) bool {
	created, ok := lastCreation(changes, d.kind, d.name, d.rv)
	if !ok {
		return false
	}
	for _, dep := range chainDependencies(d.name) {
		if unmetBetween(changes, dep.kind, dep.name, created, d.rv) {
			return true
		}
	}
	return false
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// lastCreation returns the revision of the last creation of kind/name
// before rv.
func lastCreation(changes []change, kind, name string, rv uint64) (uint64, bool) {
	var at uint64
	found := false
	for _, c := range changes {
		if c.kind == kind && c.name == name && c.event == watch.Added && c.rv < rv && c.rv >= at {
			at, found = c.rv, true
		}
	}
	return at, found
}

// chainDependencies returns the dependencies of a template of the chain:
// the gate policy, and the step before; nil for other templates.
func chainDependencies(template string) []change {
	var i int
	if _, err := fmt.Sscanf(template, "step-%d", &i); err != nil {
		return nil
	}
	deps := []change{{kind: "Policy", name: "gate"}}
	if i > 1 {
		deps = append(deps, change{kind: "ConfigurationPolicy", name: step(i - 1)})
	}
	return deps
}

// expectNoTemplateEarly checks, from the history recorded since before the
// agent first started, that each time a template of the chain appeared all
// its dependencies were Compliant.
func (f *killFixture) expectNoTemplateEarly() {
	changes := f.history.snapshot()
	var early []string
	appeared, inFlight := 0, 0
	for _, c := range changes {
		deps := chainDependencies(c.name)
		if c.kind != "ConfigurationPolicy" || c.event != watch.Added || deps == nil {
			continue
		}
		appeared++
		for _, dep := range deps {
			switch {
			case met(changes, dep.kind, dep.name, c.rv):
			case raced(changes, c, dep) && resolvedAfter(changes, c, dep):
				inFlight++
				f.t.Logf("%s@%d raced %s %s leaving Compliant: %v", c.name, c.rv, dep.kind, dep.name,
					around(changes, dep.kind, dep.name, c.rv))
			default:
				early = append(early, fmt.Sprintf("%s@%d before %s %s was Compliant; its changes around: %v",
					c.name, c.rv, dep.kind, dep.name, around(changes, dep.kind, dep.name, c.rv)))
			}
		}
	}
	f.t.Logf("history: %d changes recorded, chain templates appeared %d times, %d raced a dependency's change",
		len(changes), appeared, inFlight)
	NewWithT(f.t).Expect(appeared).To(BeNumerically(">=", chainSteps), "the history must see the chain's templates appear")
	NewWithT(f.t).Expect(early).To(BeEmpty(), "templates that appeared while a dependency was unmet")
}

// raced reports whether template appearance c raced a change of dep: the
// agent read dep Compliant, and dep left Compliant after that read while the
// create was in flight. That is, dep's last change before c left Compliant,
// dep was Compliant just before that change, and the template itself did not
// change in between (the agent had not yet reacted to the change). Note: no
// Kubernetes client can close this window, since the API has no transaction
// across two objects; the agent's promise is to read every dependency
// Compliant before it creates, and to remove the template once it sees the
// change (resolvedAfter).
func raced(changes []change, c, dep change) bool {
	var left *change
	for i := range changes {
		d := &changes[i]
		if d.kind == dep.kind && d.name == dep.name && d.rv < c.rv && (left == nil || d.rv > left.rv) {
			left = d
		}
	}
	if left == nil || !met(changes, dep.kind, dep.name, left.rv) {
		return false
	}
	for _, t := range changes {
		if t.kind == c.kind && t.name == c.name && t.rv > left.rv && t.rv < c.rv {
			return false
		}
	}
	return true
}

// resolvedAfter reports whether a template that raced dep was removed after
// it appeared, or dep became Compliant again.
func resolvedAfter(changes []change, c, dep change) bool {
	for _, d := range changes {
		switch {
		case d.rv <= c.rv:
		case d.kind == c.kind && d.name == c.name && d.event == watch.Deleted:
			return true
		case d.kind == dep.kind && d.name == dep.name && d.event != watch.Deleted && d.state == policyv1.Compliant:
			return true
		}
	}
	return false
}

// around returns the last changes of kind/name before rv and the first
// after, as state@revision, for a failure message.
func around(changes []change, kind, name string, rv uint64) []string {
	var before, after []string
	for _, c := range changes {
		if c.kind != kind || c.name != name {
			continue
		}
		s := fmt.Sprintf("%s:%s@%d", c.event, c.state, c.rv)
		if c.rv < rv {
			before = append(before, s)
		} else if len(after) == 0 {
			after = append(after, s)
		}
	}
	if len(before) > 3 {
		before = before[len(before)-3:]
	}
	return append(append(before, "|"), after...)
}

// auditOf lists the logged requests on the object key of resource, for a
// failure's message: who, what, and how it ended.
func (f *killFixture) auditOf(resource string, key client.ObjectKey) string {
	events, err := f.mc.ReadAuditLog()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range events {
		if ev.ObjectRef == nil || ev.ObjectRef.Resource != resource || ev.ObjectRef.Namespace != key.Namespace || ev.ObjectRef.Name != key.Name {
			continue
		}
		status := "no status"
		if ev.ResponseStatus != nil {
			status = fmt.Sprintf("%d %s", ev.ResponseStatus.Code, ev.ResponseStatus.Message)
		}
		out = append(out, fmt.Sprintf("%s by %s at %s: %s", ev.Verb, ev.User.Username, ev.StageTimestamp.Format("15:04:05.000000"), status))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
