package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
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
	"px":         num,
	"center":     func(start, size float64) float64 { return start + size/2 },
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
	// Page names the page for the script: matrix, policy or set.
	Page string
	// API is the endpoint the page's script polls.
	API     string
	Refresh int64
	Graph   GraphView
	Policy  *PolicyView
	Set     *SetView
}

func (s *Server) matrixPage(w http.ResponseWriter, r *http.Request) {
	inv, err := s.fleet(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.renderWithGraph(w, r, inv, "", "index.html",
		page{Title: "Canopy compliance", Page: "matrix", API: "/api/matrix", Refresh: s.refreshMillis()})
}

func (s *Server) policyPage(w http.ResponseWriter, r *http.Request) {
	view, inv, err := s.policy(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	key := view.Namespace + "/" + view.Name
	s.renderWithGraph(w, r, inv, policyv1.PolicyKind+"/"+key, "policy.html",
		page{Title: key + " · Canopy", Page: "policy", API: "/api/policies/" + key, Refresh: s.refreshMillis(), Policy: &view})
}

func (s *Server) setPage(w http.ResponseWriter, r *http.Request) {
	view, inv, err := s.set(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	key := view.Namespace + "/" + view.Name
	s.renderWithGraph(w, r, inv, policyv1beta1.PolicySetKind+"/"+key, "policyset.html",
		page{Title: key + " · PolicySet · Canopy", Page: "set", API: "/api/policysets/" + key, Refresh: s.refreshMillis(), Set: &view})
}

// renderWithGraph renders the page name with the graph of inv around focus.
func (s *Server) renderWithGraph(w http.ResponseWriter, r *http.Request, inv report.Inventory, focus, name string, data page) {
	graph, err := buildGraph(r.Context(), inv, focus)
	if err != nil {
		s.fail(w, err)
		return
	}
	data.Graph = graph
	s.render(w, name, data)
}

func (s *Server) matrixAPI(w http.ResponseWriter, r *http.Request) {
	inv, err := s.fleet(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, newMatrix(inv, time.Now()))
}

func (s *Server) policyAPI(w http.ResponseWriter, r *http.Request) {
	view, _, err := s.policy(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, view)
}

func (s *Server) setAPI(w http.ResponseWriter, r *http.Request) {
	view, _, err := s.set(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, view)
}

// newMatrix is the overview of inv, the hub's roots, sets and replicas.
func newMatrix(inv report.Inventory, now time.Time) MatrixView {
	v := newMatrixView(report.Build(inv.Policies), reasonsOf(inv), now)
	for _, set := range inv.PolicySets {
		row := SetRow{Namespace: set.Namespace, Name: set.Name, Compliant: set.Status.ComplianceState,
			StatusMessage: set.Status.StatusMessage, Members: []string{}}
		for _, m := range set.Spec.Policies {
			row.Members = append(row.Members, string(m))
		}
		v.Sets = append(v.Sets, row)
	}
	slices.SortFunc(v.Sets, func(a, b SetRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	v.Graph = graphState(inv, "")
	return v
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

// fleet is the inventory with every replica, whose template states and
// reasons the overview shows. Note: uncached, because the hub's cache
// drops the replicas' details.
func (s *Server) fleet(ctx context.Context) (report.Inventory, error) {
	inv, err := s.inventory(ctx)
	if err != nil {
		return inv, err
	}
	replicas := &policyv1.PolicyList{}
	if err := s.APIReader.List(ctx, replicas, client.HasLabels{policyv1.RootPolicyLabel}); err != nil {
		return inv, fmt.Errorf("listing the replicas: %w", err)
	}
	inv.Policies = append(slices.Clip(inv.Policies), replicas.Items...)
	return inv, nil
}

// policy describes one root policy; it also returns the inventory, with
// every replica, for the graph.
func (s *Server) policy(ctx context.Context, namespace, name string) (PolicyView, report.Inventory, error) {
	inv, err := s.fleet(ctx)
	if err != nil {
		return PolicyView{}, inv, err
	}
	i := slices.IndexFunc(inv.Policies, func(p policyv1.Policy) bool {
		_, replica := p.Labels[policyv1.RootPolicyLabel]
		return !replica && p.Namespace == namespace && p.Name == name
	})
	if i < 0 {
		return PolicyView{}, inv, errNotFound
	}
	root := &inv.Policies[i]
	view := newPolicyView(root, inv.Policies, inv, time.Now())
	view.Graph = graphState(inv, policyv1.PolicyKind+"/"+namespace+"/"+name)
	return view, inv, nil
}

// set describes one PolicySet; it also returns the inventory for the graph.
func (s *Server) set(ctx context.Context, namespace, name string) (SetView, report.Inventory, error) {
	inv, err := s.fleet(ctx)
	if err != nil {
		return SetView{}, inv, err
	}
	i := slices.IndexFunc(inv.PolicySets, func(p policyv1beta1.PolicySet) bool {
		return p.Namespace == namespace && p.Name == name
	})
	if i < 0 {
		return SetView{}, inv, errSetNotFound
	}
	view := newSetView(&inv.PolicySets[i], inv, time.Now())
	view.Graph = graphState(inv, policyv1beta1.PolicySetKind+"/"+namespace+"/"+name)
	return view, inv, nil
}

// errNotFound and errSetNotFound answer 404.
var (
	errNotFound    = apierrors.NewNotFound(policyv1.GroupVersion.WithResource("policies").GroupResource(), "")
	errSetNotFound = apierrors.NewNotFound(policyv1beta1.GroupVersion.WithResource("policysets").GroupResource(), "")
)

// fail answers an error without its details, which go to the log.
func (s *Server) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, errSetNotFound) {
		http.Error(w, "policy set not found", http.StatusNotFound)
		return
	}
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
