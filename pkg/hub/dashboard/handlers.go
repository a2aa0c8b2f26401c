package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// funcs are the template functions of the pages.
var funcs = template.FuncMap{
	"stateClass": stateClass,
	"stateText":  stateText,
}

// stateClass is the CSS class of a compliance state.
func stateClass(s policyv1.ComplianceState) string {
	if s == "" {
		return "state-unknown"
	}
	return "state-" + strings.ToLower(string(s))
}

// stateText shows a compliance state, unknown as report.Unknown.
func stateText(s policyv1.ComplianceState) string {
	if s == "" {
		return report.Unknown
	}
	return string(s)
}

// page is what every page template gets.
type page struct {
	Title string
	// API is the endpoint the page's script polls.
	API     string
	Refresh int64
	Graph   GraphView
	Policy  *PolicyView
}

func (s *Server) matrixPage(w http.ResponseWriter, r *http.Request) {
	inv, err := s.inventory(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "index.html", page{Title: "Canopy compliance", API: "/api/matrix", Refresh: s.refreshMillis(),
		Graph: buildGraph(inv, "")})
}

func (s *Server) policyPage(w http.ResponseWriter, r *http.Request) {
	view, inv, err := s.policy(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	key := view.Namespace + "/" + view.Name
	s.render(w, "policy.html", page{Title: key + " · Canopy", API: "/api/policies/" + key,
		Refresh: s.refreshMillis(), Graph: buildGraph(inv, policyv1.PolicyKind+"/"+key), Policy: &view})
}

func (s *Server) matrixAPI(w http.ResponseWriter, r *http.Request) {
	inv, err := s.inventory(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, newMatrixView(report.Build(inv.Policies), time.Now()))
}

func (s *Server) policyAPI(w http.ResponseWriter, r *http.Request) {
	view, _, err := s.policy(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, view)
}

// inventory lists the root policies and the policy sets from the cache.
func (s *Server) inventory(ctx context.Context) (report.Inventory, error) {
	list := &policyv1.PolicyList{}
	if err := s.Reader.List(ctx, list); err != nil {
		return report.Inventory{}, fmt.Errorf("listing policies: %w", err)
	}
	roots := list.Items[:0]
	for _, p := range list.Items {
		if _, replica := p.Labels[policyv1.RootPolicyLabel]; !replica {
			roots = append(roots, p)
		}
	}
	sets := &policyv1beta1.PolicySetList{}
	if err := s.Reader.List(ctx, sets); err != nil {
		return report.Inventory{}, fmt.Errorf("listing policy sets: %w", err)
	}
	return report.Inventory{Policies: roots, PolicySets: sets.Items}, nil
}

// policy describes one root policy; it also returns the inventory, with
// the policy's replicas, for the graph.
func (s *Server) policy(ctx context.Context, namespace, name string) (PolicyView, report.Inventory, error) {
	inv, err := s.inventory(ctx)
	if err != nil {
		return PolicyView{}, inv, err
	}
	roots := inv.Policies
	var root *policyv1.Policy
	states := map[string]policyv1.ComplianceState{}
	for i := range roots {
		states[roots[i].Namespace+"/"+roots[i].Name] = roots[i].Status.ComplianceState
		if roots[i].Namespace == namespace && roots[i].Name == name {
			root = &roots[i]
		}
	}
	if root == nil {
		return PolicyView{}, inv, errNotFound
	}
	replicas := &policyv1.PolicyList{}
	// Note: uncached, because the hub's cache drops the replicas' details.
	if err := s.APIReader.List(ctx, replicas, client.MatchingLabels{policyv1.RootPolicyLabel: namespace + "." + name}); err != nil {
		return PolicyView{}, inv, fmt.Errorf("listing the replicas of %s/%s: %w", namespace, name, err)
	}
	view := newPolicyView(root, replicas.Items, states, time.Now())
	inv.Policies = append(slices.Clip(roots), replicas.Items...) // the replicas give the templates' states
	return view, inv, nil
}

// errNotFound answers 404.
var errNotFound = apierrors.NewNotFound(policyv1.GroupVersion.WithResource("policies").GroupResource(), "")

// fail answers an error without its details, which go to the log.
func (s *Server) fail(w http.ResponseWriter, err error) {
	if apierrors.IsNotFound(err) {
		http.Error(w, "policy not found", http.StatusNotFound)
		return
	}
	s.log.Error(err, "Serving the dashboard failed")
	http.Error(w, "the dashboard could not read the hub; see the hub's log", http.StatusServiceUnavailable)
}

func (s *Server) render(w http.ResponseWriter, name string, data page) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.fail(w, fmt.Errorf("rendering %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
