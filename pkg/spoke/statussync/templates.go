package statussync

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// A compliance event counts for its template only if it is about the
// template object that exists now (compliance.Counts), so statussync needs
// the UID of each template's object: this file reads them.
//
// It reads the manager's cache, one Get per template (the informer of a
// kind is shared with templatesync and the evaluators). The cache may lag
// behind the API server by a moment: an evaluator's report on a template
// just created can arrive before the cache holds the object. So when an
// event contradicts the cache, statussync reads that template from the API
// server before it ignores the event, and remembers the UIDs the API server
// showed not to be current: a UID never comes back, so a stale event costs
// one API read in all, not one per reconcile.

// templateGroups are the API groups of the template kinds statussync reads:
// those templatesync may write. A template of another kind never has an
// object of its Policy, and reading it could start an informer the agent
// may not run (a Secret, say).
var templateGroups = map[string]bool{policyv1.GroupName: true, hierarchyv1alpha1.GroupName: true,
	templatekinds.GatekeeperTemplatesGroup: true, templatekinds.GatekeeperConstraintsGroup: true}

// templateReadTimeout bounds a template read: a new kind's informer syncs
// first, and one that cannot (the agent may not list the kind) must not hold
// a worker forever.
const templateReadTimeout = 30 * time.Second

// goneTTL is how long a UID found not current is remembered: longer than
// the API server keeps events (an hour by default), after which no event
// carries it.
const goneTTL = 3 * time.Hour

// templateKinds returns the kind of each template of policy that
// statussync reads, by template name.
func templateKinds(policy *policyv1.Policy) map[string]schema.GroupVersionKind {
	out := map[string]schema.GroupVersionKind{}
	for _, pt := range policy.Spec.PolicyTemplates {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pt.ObjectDefinition.Raw); err != nil || obj.GetName() == "" {
			continue
		}
		if gvk := obj.GroupVersionKind(); templateGroups[gvk.Group] {
			out[obj.GetName()] = gvk
		}
	}
	return out
}

// templateObjects returns the UID of each template object of policy that
// exists now, by template name (absent: none), reading the cache and, for a
// template with an event the cache contradicts, the API server; and the
// status.history of those that keep one, by template name.
func (r *Reconciler) templateObjects(ctx context.Context, policy *policyv1.Policy, events []corev1.Event) (map[string]types.UID, map[string][]policyv1.HistoryEvent, error) {
	kinds := templateKinds(policy)
	objects := map[string]types.UID{}
	histories := map[string][]policyv1.HistoryEvent{}
	keep := func(name string, obj *TemplateObject) {
		delete(objects, name)
		delete(histories, name)
		if obj != nil {
			objects[name] = obj.UID
			if len(obj.History) > 0 {
				histories[name] = obj.History
			}
		}
	}
	for name, gvk := range kinds {
		obj, err := r.readTemplateObject(ctx, r.templates, policy, gvk, name)
		if err != nil {
			return nil, nil, err
		}
		keep(name, obj)
	}
	for _, name := range Contradicted(string(policy.UID), events, objects, r.gone.has) {
		gvk, ok := kinds[name]
		if !ok {
			continue // nothing to read: no object of this template can exist
		}
		obj, err := r.readTemplateObject(ctx, r.ManagedReader, policy, gvk, name)
		if err != nil {
			return nil, nil, err
		}
		keep(name, obj)
		r.gone.add(staleUIDs(string(policy.UID), events, name, objects[name])...)
	}
	return objects, histories, nil
}

// templateObject is an empty object of kind gvk to read a template into:
// typed when the scheme knows the kind, so that the cache shares the
// informer its evaluator reads (ConfigurationPolicy, OperatorPolicy,
// CertificatePolicy), metadata only otherwise. Only the metadata is
// read; an unstructured object would make the cache keep a second, whole
// copy of every template (make bench: agent heap profile).
func (r *Reconciler) templateObject(gvk schema.GroupVersionKind) client.Object {
	if o, err := r.scheme.New(gvk); err == nil {
		if obj, ok := o.(client.Object); ok {
			return obj
		}
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// Contradicted returns the templates of which an event of the Policy with
// uid does not count given objects (the UIDs of the templates' objects, by
// name), once each, leaving out events about a UID known gone.
func Contradicted(uid string, events []corev1.Event, objects map[string]types.UID, gone func(types.UID) bool) []string {
	var out []string
	seen := map[string]bool{}
	for i := range events {
		ev := &events[i]
		c, err := compliance.Parse(ev)
		if err != nil || string(ev.InvolvedObject.UID) != uid || seen[c.Template.Name] ||
			compliance.Counts(ev, objects[c.Template.Name]) || (ev.Related != nil && gone(ev.Related.UID)) {
			continue
		}
		seen[c.Template.Name] = true
		out = append(out, c.Template.Name)
	}
	return out
}

// staleUIDs returns the UIDs that events of the Policy with uid about
// template carry, other than current: the API server showed them not to be
// the template's object.
func staleUIDs(uid string, events []corev1.Event, template string, current types.UID) []types.UID {
	var out []types.UID
	for i := range events {
		ev := &events[i]
		c, err := compliance.Parse(ev)
		if err != nil || string(ev.InvolvedObject.UID) != uid || c.Template.Name != template ||
			ev.Related == nil || ev.Related.UID == "" || ev.Related.UID == current {
			continue
		}
		out = append(out, ev.Related.UID)
	}
	return out
}

// goneUIDs remembers template object UIDs the API server showed not to be
// current, for goneTTL. It is long-lived, shared by the workers.
type goneUIDs struct {
	mu   sync.Mutex
	uids map[types.UID]time.Time
}

func (g *goneUIDs) has(uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.uids[uid]
	return ok
}

func (g *goneUIDs) add(uids ...types.UID) {
	if len(uids) == 0 {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.uids == nil {
		g.uids = map[types.UID]time.Time{}
	}
	for uid, at := range g.uids {
		if now.Sub(at) > goneTTL {
			delete(g.uids, uid)
		}
	}
	for _, uid := range uids {
		g.uids[uid] = now
	}
}
