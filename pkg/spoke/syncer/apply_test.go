package syncer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
)

// TestApplySendsAPlansWritesTogether: the creates of one namespace's plan
// are sent controllerdefaults.SyncerWritesPerScope at once, and each
// outcome is recorded under its own action, whatever order the answers
// come in. Each create waits until that many are in flight, so writes sent
// one at a time fail it (after a timeout, as refused writes).
func TestApplySendsAPlansWritesTogether(t *testing.T) {
	g := NewWithT(t)
	const n = 10
	together := int32(controllerdefaults.SyncerWritesPerScope)
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			if now == together {
				once.Do(func() { close(release) })
			}
			select {
			case <-release:
			case <-time.After(10 * time.Second):
				return errors.New("sent one at a time")
			}
			if name := obj.GetName(); name == "cm-3" || name == "cm-7" {
				return errors.New("forbidden")
			}
			obj.SetUID(types.UID("uid-" + obj.GetName()))
			return cl.Create(ctx, obj, opts...)
		},
	})
	r := &Reconciler{ManagedClient: c}
	o := outcome{namespace: "team-a"}
	for i := range n {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("team-a")
		u.SetName(fmt.Sprintf("cm-%d", i))
		o.actions = append(o.actions, action{op: opCreate, object: u, reason: "declared but missing"})
	}

	r.apply(logr.NewContext(context.Background(), logr.Discard()), &o, true)

	g.Expect(peak.Load()).To(Equal(together), "writes in flight at once")
	g.Expect(o.failed.writes).To(HaveLen(2))
	g.Expect(o.failed.write(3)).To(MatchError("create ConfigMap team-a/cm-3: forbidden"))
	g.Expect(o.failed.write(7)).To(MatchError("create ConfigMap team-a/cm-7: forbidden"))
	g.Expect(o.written).To(HaveLen(n - 2))
	for i := range n {
		_, ok := o.written[types.UID(fmt.Sprintf("uid-cm-%d", i))]
		g.Expect(ok).To(Equal(i != 3 && i != 7), "cm-%d recorded as written", i)
		g.Expect(o.actions[i].object.GetName()).To(Equal(fmt.Sprintf("cm-%d", i)), "the plan's order is kept")
	}
}
