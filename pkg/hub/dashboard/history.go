package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/historyview"
)

// DefaultHistorySince is the window of a history request without since.
const DefaultHistorySince = 7 * 24 * time.Hour

// historyLimitRows bounds the transitions one history answer holds; the
// newest are kept and Truncated says so.
const historyLimitRows = 50000

// HistoryReader opens the compliance history store for the dashboard on
// first use, and again after a failure. The dashboard only reads it; the
// CLI reads it through the dashboard and never holds its credentials.
type HistoryReader struct {
	url string

	mu    sync.Mutex
	store history.Store
}

// NewHistoryReader returns a reader of the store at url (a SQLite file path
// or postgres://...), as the hub's --history-database names it.
func NewHistoryReader(url string) *HistoryReader {
	return &HistoryReader{url: url}
}

// query runs q on the store, opening it first when needed.
func (h *HistoryReader) query(ctx context.Context, q history.Query) (history.Result, error) {
	h.mu.Lock()
	if h.store == nil {
		s, err := history.Open(ctx, h.url)
		if err != nil {
			h.mu.Unlock()
			return history.Result{}, fmt.Errorf("opening the history database: %w", err)
		}
		h.store = s
	}
	store := h.store
	h.mu.Unlock()
	return store.Query(ctx, q)
}

// newest runs q with the dashboard's row limit: it returns at most
// historyLimitRows transitions, the newest, and whether older ones were
// left out.
func (h *HistoryReader) newest(ctx context.Context, q history.Query) (history.Result, bool, error) {
	q.Limit = historyLimitRows + 1
	res, err := h.query(ctx, q)
	if err != nil {
		return res, false, err
	}
	if len(res.Transitions) > historyLimitRows {
		return history.Result{Transitions: res.Transitions[1:], Gaps: res.Gaps}, true, nil
	}
	return res, false, nil
}

// HistoryView is the answer of /api/history (historyview.HistoryView).
type HistoryView = historyview.HistoryView

// historyAPI answers GET /api/history/{kind}/{namespace}/{name}, kind being
// policies or policysets, with ?cluster=, ?hub= and ?since= (a duration
// such as 36h or 7d, or an RFC 3339 time).
func (s *Server) historyAPI(w http.ResponseWriter, r *http.Request) {
	if s.noHistory(w) {
		return
	}
	since, err := ParseSince(r.URL.Query().Get("since"), time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	view := HistoryView{
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Cluster: r.URL.Query().Get("cluster"), Since: since,
	}
	switch r.PathValue("kind") {
	case "policies":
		view.Kind = "Policy"
		view.Policies = []history.Policy{{Namespace: view.Namespace, Name: view.Name}}
	case "policysets":
		view.Kind = policyv1beta1.PolicySetKind
		set := &policyv1beta1.PolicySet{}
		if err := s.Reader.Get(r.Context(), types.NamespacedName{Namespace: view.Namespace, Name: view.Name}, set); err != nil {
			if apierrors.IsNotFound(err) {
				err = errSetNotFound
			}
			s.fail(w, err)
			return
		}
		for _, m := range set.Spec.Policies {
			view.Policies = append(view.Policies, history.Policy{Namespace: view.Namespace, Name: string(m)})
		}
	default:
		http.NotFound(w, r)
		return
	}
	view.Transitions, view.Gaps = []history.Transition{}, []history.Gap{}
	if len(view.Policies) > 0 {
		res, truncated, ok := s.readHistory(w, r, history.Query{
			Hub: r.URL.Query().Get("hub"), Cluster: view.Cluster, Policies: view.Policies, Since: since,
		})
		if !ok {
			return
		}
		view.Truncated = truncated
		view.Transitions = append(view.Transitions, res.Transitions...)
		view.Gaps = append(view.Gaps, res.Gaps...)
	}
	writeJSON(w, view)
}

// noHistory answers the request with 404 and returns true when the hub
// records no history.
func (s *Server) noHistory(w http.ResponseWriter) bool {
	if s.History == nil {
		http.Error(w, "this hub records no compliance history (--history-database=none)", http.StatusNotFound)
	}
	return s.History == nil
}

// readHistory reads the newest transitions and the gaps q selects, and
// whether there were more transitions than one answer holds. When the
// store cannot be read, it answers the request and returns false.
func (s *Server) readHistory(w http.ResponseWriter, r *http.Request, q history.Query) (history.Result, bool, bool) {
	res, truncated, err := s.History.newest(r.Context(), q)
	if err != nil {
		s.log.Error(err, "Reading compliance history failed")
		http.Error(w, "the dashboard could not read the compliance history; see the hub's log", http.StatusServiceUnavailable)
		return history.Result{}, false, false
	}
	return res, truncated, true
}

// ParseSince reads a history window's start relative to now: empty means
// DefaultHistorySince; a Go duration ("36h") or a number of days ("7d")
// counts back from now; else an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "":
		return now.Add(-DefaultHistorySince), nil
	case strings.HasSuffix(s, "d"):
		days, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
		if err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	default:
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("since: want a duration such as 36h or 7d, or an RFC 3339 time")
}
