package compliance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestRecorderWithClock: a Recorder given a clock stamps its events with
// that clock's time (an agent's clock 5 minutes behind the hub's), which
// statussync copies into the hub's compliance history.
func TestRecorderWithClock(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	policy := newPolicy(t, cp.Client, ns, "parent")
	behind := time.Now().Add(-5 * time.Minute).Truncate(time.Second)
	r := NewRecorder(cp.Client, cp.Client, EventSource{Component: "canopy-agent", Instance: "test"}).
		WithClock(clocktesting.NewFakePassiveClock(behind))
	c := Compliance{Template: types.NamespacedName{Namespace: ns, Name: "cfg"}, State: policyv1.Compliant, Message: "notification - found"}
	related := &corev1.ObjectReference{Kind: "ConfigurationPolicy", Namespace: ns, Name: "cfg"}
	g.Expect(r.Record(t.Context(), ParentFromPolicy(policy), c, RecordOptions{Related: related})).To(BeTrue())
	events := eventsOf(t, g, cp.Client, policy)
	g.Expect(events).To(HaveLen(1))
	g.Expect(events[0].LastTimestamp.Time).To(BeTemporally("==", behind))
	g.Expect(events[0].FirstTimestamp.Time).To(BeTemporally("==", behind))
}
