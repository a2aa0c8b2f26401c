package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// change is one recorded watch event of a policy object.
type change struct {
	kind, name string
	event      watch.EventType
	// rv is the event's resourceVersion. Note: all objects of one API
	// server share etcd's revision counter, so the test may compare them
	// across kinds; clients may not in general.
	rv    uint64
	state policyv1.ComplianceState
}

// history records every change of the Policies and ConfigurationPolicies in
// one namespace from a point in time on, by watching them.
type history struct {
	mu      sync.Mutex
	changes []change
}

// recordHistory watches the policies of namespace until the test ends.
func recordHistory(t *testing.T, c client.WithWatch, namespace string) *history {
	h := &history{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for kind, list := range map[string]client.ObjectList{
		"Policy":              &policyv1.PolicyList{},
		"ConfigurationPolicy": &policyv1.ConfigurationPolicyList{},
	} {
		NewWithT(t).Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		NewWithT(t).Expect(meta(list).GetResourceVersion()).NotTo(BeEmpty())
		rv := meta(list).GetResourceVersion()
		wg.Go(func() { h.watch(ctx, t, c, kind, list, namespace, rv) })
	}
	return h
}

func meta(list client.ObjectList) metav1.ListInterface { return list }

// watch records the changes of kind from rv on, watching again from the
// last change whenever the watch ends, until ctx ends.
func (h *history) watch(ctx context.Context, t *testing.T, c client.WithWatch, kind string, list client.ObjectList, namespace, rv string) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			t.Errorf("watching %s: the history has a gap: %v", kind, err)
			return
		}
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if ctx.Err() != nil {
					break
				}
				t.Errorf("watching %s: %v", kind, ev.Object)
				w.Stop()
				return
			}
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			rv = obj.GetResourceVersion()
			h.add(kind, obj, ev.Type)
		}
	}
}

func (h *history) add(kind string, obj client.Object, event watch.EventType) {
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("resourceVersion %q: %v", obj.GetResourceVersion(), err))
	}
	ch := change{kind: kind, name: obj.GetName(), event: event, rv: rv}
	switch o := obj.(type) {
	case *policyv1.Policy:
		ch.state = o.Status.ComplianceState
	case *policyv1.ConfigurationPolicy:
		ch.state = o.Status.ComplianceState
	}
	h.mu.Lock()
	h.changes = append(h.changes, ch)
	h.mu.Unlock()
}

// snapshot returns the changes recorded so far.
func (h *history) snapshot() []change {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]change(nil), h.changes...)
}

// met reports whether the object kind/name existed with compliance
// Compliant at revision rv (after every change before rv).
func met(changes []change, kind, name string, rv uint64) bool {
	var last *change
	for i := range changes {
		c := &changes[i]
		if c.kind == kind && c.name == name && c.rv < rv && (last == nil || c.rv > last.rv) {
			last = c
		}
	}
	return last != nil && last.event != watch.Deleted && last.state == policyv1.Compliant
}

// unmetBetween reports whether the object kind/name was missing or not
// Compliant at some revision in [from, to).
func unmetBetween(changes []change, kind, name string, from, to uint64) bool {
	if !met(changes, kind, name, from) {
		return true
	}
	for _, c := range changes {
		if c.kind == kind && c.name == name && c.rv >= from && c.rv < to &&
			(c.event == watch.Deleted || c.state != policyv1.Compliant) {
			return true
		}
	}
	return false
}
