package syncer

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestFailuresKeepEveryKind: a failed read, the first unserved propagation
// kind and the first action's failed write are three failures, reported in
// that order. A map keyed by action index, with reads under -1 and kind i
// under -1-i, kept two of them: kind 0 overwrote the read.
func TestFailuresKeepEveryKind(t *testing.T) {
	g := NewWithT(t)
	read, write := errors.New("reading ConfigMap a/b: timeout"), errors.New("create ConfigMap a/b: forbidden")
	var f failures
	f.read = read
	f.kinds = unservedKinds(meta.NewDefaultRESTMapper(nil),
		policy(t, `{metadata: {name: p}, spec: {propagation: {kinds: [{group: example.com, kind: Widget}]}}}`))
	f.setWrite(0, write)

	g.Expect(f.kinds).To(HaveLen(1))
	g.Expect(f.kinds[0]).To(MatchError(ContainSubstring("propagation kind Widget.example.com")))
	g.Expect(f.count()).To(Equal(3))
	g.Expect(f.all()).To(Equal([]error{read, f.kinds[0], write}))
	g.Expect(f.write(0)).To(Equal(write))
	g.Expect(f.write(1)).To(Succeed(), "action 1 did not fail")
}

// TestUnservedKinds reports only the propagation kinds the cluster does not
// serve, in spec order.
func TestUnservedKinds(t *testing.T) {
	g := NewWithT(t)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	p := policy(t, `{metadata: {name: p}, spec: {propagation: {kinds: [{kind: Gadget}, {kind: ConfigMap}, {kind: Widget}]}}}`)
	errs := unservedKinds(mapper, p)
	g.Expect(errs).To(HaveLen(2))
	g.Expect(errs[0]).To(MatchError(ContainSubstring("propagation kind Gadget")))
	g.Expect(errs[1]).To(MatchError(ContainSubstring("propagation kind Widget")))
	g.Expect(unservedKinds(mapper, policy(t, `{metadata: {name: none}}`))).To(BeEmpty())
}

// TestStatusCountsEveryFailure: the status counts a scope's failed read and
// its first unserved propagation kind as two failures, and names the read
// first.
func TestStatusCountsEveryFailure(t *testing.T) {
	g := NewWithT(t)
	p := policy(t, `{metadata: {name: p}, spec: {propagation: {kinds: [{kind: Widget}]}}}`)
	o := outcome{failed: failures{read: errors.New("reading ClusterRole viewer: timeout"),
		kinds: unservedKinds(meta.NewDefaultRESTMapper(nil), p)}}
	st := evaluatedStatus(p, newTree(p), []outcome{o}, time.Now())
	g.Expect(st.ComplianceState).To(Equal(policyv1.NonCompliant))
	c := meta.FindStatusCondition(st.Conditions, ConditionInSync)
	g.Expect(c.Reason).To(Equal(ReasonFailed))
	g.Expect(c.Message).To(Equal("2 reads or writes failed and are retried. First: reading ClusterRole viewer: timeout"))
}
