package faults

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// The audit check of TestRolloutUnderFaults fails when it should: these
// feed it made-up audit logs.

func TestEarlyWrites(t *testing.T) {
	groups := [][]string{{"a"}, {"b"}, {"c", "d"}}
	all := map[string]bool{"a": true, "b": true, "c": true, "d": true}
	none := map[string]bool{}
	root := auditStep{kind: rootWrite}
	write := func(c string) auditStep { return auditStep{kind: replicaWrite, cluster: c} }
	reported := func(c string) auditStep { return auditStep{kind: report, cluster: c} }
	inOrder := []auditStep{
		root, write("a"), reported("a"), write("b"), reported("b"), write("c"), write("d"), reported("c"), reported("d"),
	}
	tests := []struct {
		name       string
		steps      []auditStep
		changed    []map[string]bool
		violations int
	}{
		{"group after group, each reported", inOrder, []map[string]bool{all}, 0},
		{"a second rollout, each reported again", append(inOrder, inOrder...), []map[string]bool{all, all}, 0},
		{"a second rollout in which b is written before a reported on its new spec",
			append(inOrder, root, write("a"), write("b"), reported("a"), reported("b"), write("c"), write("d")),
			[]map[string]bool{all, all}, 1},
		{"a second rollout that changed no generation needs no new report (the last one is about the same spec)",
			append(inOrder, root, write("a"), write("b"), write("c"), write("d")), []map[string]bool{all, none}, 0},
		{"but its order holds: b before a is early",
			append(inOrder, root, write("b"), write("a"), write("c"), write("d")), []map[string]bool{all, none}, 1},
		{"a report made before the write does not count",
			[]auditStep{root, reported("a"), write("a"), write("b")}, []map[string]bool{all}, 1},
		{"the last group before the first reported",
			[]auditStep{root, write("a"), write("c"), reported("a"), write("b"), reported("b"), write("d")}, []map[string]bool{all}, 2},
		{"a hub restart's rewrite of a later group once all reported is fine",
			append(inOrder, write("d")), []map[string]bool{all}, 0},
		{"a write before the root exists", []auditStep{write("a")}, []map[string]bool{all}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(earlyWrites(tt.steps, groups, tt.changed)).To(HaveLen(tt.violations))
		})
	}
}

func TestRolloutSteps(t *testing.T) {
	event := func(user, verb, ns, name, sub string, code int32) controlplane.AuditEvent {
		ev := controlplane.AuditEvent{Verb: verb}
		ev.User.Username = user
		ev.ObjectRef = &struct {
			Resource    string `json:"resource"`
			Subresource string `json:"subresource"`
			Namespace   string `json:"namespace"`
			Name        string `json:"name"`
			APIGroup    string `json:"apiGroup"`
		}{Resource: "policies", Subresource: sub, Namespace: ns, Name: name}
		if code != 0 {
			ev.ResponseStatus = &metav1.Status{Code: code}
		}
		return ev
	}
	replica := rolloutNS + "." + rolloutRoot
	events := []controlplane.AuditEvent{
		event("admin", "create", rolloutNS, rolloutRoot, "", 201),
		event(hubUser, "patch", rolloutNS, rolloutRoot, "status", 200), // the root's status: not a step
		event(hubUser, "create", "a", replica, "", 201),                // a replica write
		event(hubUser, "update", "b", replica, "", 500),                // cut short by a kill: may have been written
		event(hubUser, "update", "b", replica, "", 409),                // refused: not a write
		event(hubrbac.User("a"), "patch", "a", replica, "status", 200), // a's report
		event(hubrbac.User("b"), "patch", "a", replica, "status", 200), // not a's agent: not a report
		event(hubrbac.User("a"), "patch", "a", replica, "status", 409), // refused: not a report
		event(hubUser, "update", "a", "other.policy", "", 200),         // another root's replica
		event(hubUser, "update", "e", replica, "", 200),                // not a cluster of the rollout
		event("admin", "update", rolloutNS, rolloutRoot, "", 200),      // a change of the root
		event(hubUser, "delete", "a", replica, "", 200),                // a deletion is not a write of a spec
	}
	steps := rolloutSteps(events, []string{"a", "b"})
	var got []string
	for _, s := range steps {
		got = append(got, [...]string{"root", "write", "report"}[s.kind]+" "+s.cluster)
	}
	NewWithT(t).Expect(got).To(Equal([]string{"root ", "write a", "write b", "report a", "root "}))
}

func TestStaleSuccesses(t *testing.T) {
	groups := [][]string{{"a"}, {"b"}}
	v := func(c string, rv uint64, gen int64, wave string, state policyv1.ComplianceState) replicaVersion {
		return replicaVersion{cluster: c, rv: rv, generation: gen, wave: wave, state: state}
	}
	created := []replicaVersion{
		v("a", 11, 1, "1", ""), v("a", 12, 1, "1", policyv1.Compliant), v("b", 13, 1, "1", ""), v("b", 14, 1, "1", policyv1.Compliant),
	}
	phase0 := rolloutPhase{start: 10, wave: "1", generations: map[string]int64{"a": 1, "b": 1}}
	label := rolloutPhase{start: 20, wave: "2", generations: map[string]int64{"a": 1, "b": 1}}
	spec := rolloutPhase{start: 20, wave: "1", generations: map[string]int64{"a": 2, "b": 2}}
	tests := []struct {
		name       string
		versions   []replicaVersion
		phases     []rolloutPhase
		violations int
	}{
		{"b written once a is Compliant", created, []rolloutPhase{phase0}, 0},
		{"b written while a is not reported yet",
			[]replicaVersion{v("a", 11, 1, "1", ""), v("b", 12, 1, "1", "")}, []rolloutPhase{phase0}, 1},
		{"b written while a is NonCompliant",
			[]replicaVersion{v("a", 11, 1, "1", policyv1.NonCompliant), v("b", 12, 1, "1", "")}, []rolloutPhase{phase0}, 1},
		{"a label: b relabelled once a is relabelled, still Compliant",
			append(created, v("a", 21, 1, "2", policyv1.Compliant), v("b", 22, 1, "2", policyv1.Compliant)), []rolloutPhase{phase0, label}, 0},
		{"a label: b relabelled before a",
			append(created, v("b", 21, 1, "2", policyv1.Compliant), v("a", 22, 1, "2", policyv1.Compliant)), []rolloutPhase{phase0, label}, 1},
		{"a new spec: b written once a reported on it, Compliant",
			append(created, v("a", 21, 2, "1", ""), v("a", 22, 2, "1", policyv1.Compliant), v("b", 23, 2, "1", policyv1.Compliant)), []rolloutPhase{phase0, spec}, 0},
		{"a new spec: b written while a is Compliant only on a report from before its write",
			append(created, v("a", 21, 2, "1", policyv1.Compliant), v("b", 22, 2, "1", policyv1.Compliant)), []rolloutPhase{phase0, spec}, 1},
		{"a new spec: b written before a has it",
			append(created, v("b", 21, 2, "1", policyv1.Compliant), v("a", 22, 2, "1", policyv1.Compliant)), []rolloutPhase{phase0, spec}, 1},
		{"a status change of b is not a write by the hub",
			append(created, v("b", 21, 1, "1", policyv1.NonCompliant)), []rolloutPhase{phase0, spec}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(staleSuccesses(tt.versions, groups, tt.phases)).To(HaveLen(tt.violations))
		})
	}
}
