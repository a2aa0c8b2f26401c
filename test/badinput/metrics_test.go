package badinput_test

import (
	"bufio"
	"context"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// writeVerbs are the apiserver_request_total verbs that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true}

var requestTotal = regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\S+)$`)
var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiWrites returns the API server's count of write requests, by
// "verb group/resource". Leases are left out: renewing them is the agent's
// heartbeat, not work.
func apiWrites(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestTotal.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		if !writeVerbs[labels["verb"]] || labels["resource"] == "leases" {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[labels["verb"]+" "+labels["group"]+"/"+labels["resource"]+"/"+labels["subresource"]] += v
	}
	return out, sc.Err()
}

// reconciles returns controller-runtime's controller_runtime_reconcile_total
// of this process, by controller.
func reconciles() (map[string]float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out, nil
}

// delta returns after-before, without the zeros.
func delta(before, after map[string]float64) map[string]float64 {
	out := maps.Clone(after)
	for k, v := range before {
		out[k] -= v
	}
	maps.DeleteFunc(out, func(_ string, v float64) bool { return v == 0 })
	return out
}

// snapshot is the counters of the hub, the managed cluster and the
// controllers, and the resourceVersion of every policy object.
type snapshot struct {
	hub, managed, reconciles map[string]float64
	versions                 map[string]string
}

// policyLists are the objects whose changes the idle check names.
var policyLists = []struct {
	managed bool
	gvk     schema.GroupVersionKind
}{
	{false, policyv1.GroupVersion.WithKind("PolicyList")},
	{true, policyv1.GroupVersion.WithKind("PolicyList")},
	{true, policyv1.GroupVersion.WithKind("ConfigurationPolicyList")},
	{true, schema.GroupVersionKind{Group: "hierarchy.canopy.io", Version: "v1alpha1", Kind: "HierarchyPolicyList"}},
}

// versions returns the resourceVersion of every policy object, by
// "cluster kind namespace/name".
func versions(g Gomega, ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, l := range policyLists {
		c, where := env.Hub.Client, "hub"
		if l.managed {
			c, where = env.Managed[0].Client, "managed"
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(l.gvk)
		g.Expect(c.List(ctx, list)).To(Succeed())
		for _, u := range list.Items {
			out[where+" "+u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	return out
}

// changed returns the keys whose version differs.
func changed(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func takeSnapshot(g Gomega, ctx context.Context) snapshot {
	var s snapshot
	var err error
	s.hub, err = apiWrites(ctx, env.Hub.Config)
	g.Expect(err).NotTo(HaveOccurred())
	s.managed, err = apiWrites(ctx, env.Managed[0].Config)
	g.Expect(err).NotTo(HaveOccurred())
	s.reconciles, err = reconciles()
	g.Expect(err).NotTo(HaveOccurred())
	s.versions = versions(g, ctx)
	return s
}

// Bounds of the idle window: a hot loop makes hundreds of writes and
// reconciles in it; a failure retried with exponential backoff a few.
const (
	maxIdleWrites     = 5
	maxIdleReconciles = 20
)

// expectIdle waits for the writes to die down, then leaves the system alone
// for idleWindow and checks that it writes (almost) nothing and reconciles
// little: what remains are retries with backoff, which the log names.
func expectIdle(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	prev := takeSnapshot(g, ctx)
	g.Eventually(func() float64 {
		cur := takeSnapshot(g, ctx)
		n := sum(delta(prev.hub, cur.hub)) + sum(delta(prev.managed, cur.managed))
		prev = cur
		return n
	}, 3*time.Minute, 5*time.Second).Should(BeNumerically("<=", 1), "writes per 5s")
	before := takeSnapshot(g, ctx)
	time.Sleep(idleWindow) // the window being measured, not a wait for a condition
	after := takeSnapshot(g, ctx)
	hub, managed, rec := delta(before.hub, after.hub), delta(before.managed, after.managed), delta(before.reconciles, after.reconciles)
	t.Logf("in %v: hub writes %v, managed writes %v, reconciles %v, objects changed %v",
		idleWindow, hub, managed, rec, changed(before.versions, after.versions))
	g.Expect(sum(hub)+sum(managed)).To(BeNumerically("<=", maxIdleWrites), "writes while idle")
	for name, n := range rec {
		g.Expect(n).To(BeNumerically("<=", maxIdleReconciles), "reconciles of %s while idle", name)
	}
}

func sum(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}
