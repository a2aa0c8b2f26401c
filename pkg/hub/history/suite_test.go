package history_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/postgres"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/hub"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"

	_ "modernc.org/sqlite" // the "sqlite" driver, for the tests' lock
)

// suite is a hub API server; each test runs its own recorders against it.
var suite = &controlplane.Suite{Name: "hub"}

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	suite.Main(m)
}

// base is the agent's clock of the tests' events: event i is i minutes
// after it.
var base = time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)

// database is an empty database of one kind for one test, which the test
// can take down and bring back.
type database struct {
	// url is the --history-database of the database.
	url string
	// down makes the database refuse the recorder's writes: PostgreSQL
	// stops; SQLite is locked by another writer (the tests run as root, to
	// whom file permissions are no obstacle).
	down func()
	// up undoes down.
	up func()
}

// databases opens an empty database of each kind; the PostgreSQL one on a
// real server the test starts.
func databases() map[string]func(t *testing.T) database {
	return map[string]func(t *testing.T) database{
		"sqlite": func(t *testing.T) database {
			url := filepath.Join(t.TempDir(), "history.db")
			var lock *sql.Conn
			var db *sql.DB
			up := func() {
				if lock != nil {
					_, _ = lock.ExecContext(context.Background(), "ROLLBACK")
					_ = lock.Close()
					_ = db.Close()
					lock, db = nil, nil
				}
			}
			t.Cleanup(up)
			return database{url: url, up: up, down: func() {
				var err error
				db, err = sql.Open("sqlite", "file:"+url)
				if err == nil {
					lock, err = db.Conn(t.Context())
				}
				if err == nil {
					_, err = lock.ExecContext(t.Context(), "BEGIN EXCLUSIVE")
				}
				if err != nil {
					t.Fatal(err)
				}
			}}
		},
		"postgres": func(t *testing.T) database {
			pg := postgres.Start(t)
			return database{url: pg.URL(), down: pg.Stop, up: pg.Restart}
		},
	}
}

// recorderOptions are what a test's recorder differs in.
type recorderOptions struct {
	// deployment is the hub Deployment that carries the condition.
	deployment types.NamespacedName
	// retention is the recorder's Retention.
	retention time.Duration
}

// runRecorder runs a recorder of hubName writing to url, as the hub
// assembles it, until the returned stop is called (a hub stopping) or the
// test ends.
func runRecorder(t *testing.T, url, hubName string, opts ...recorderOptions) (stop func()) {
	t.Helper()
	cp := suite.Get(t)
	mo := hub.ManagerOptions(hub.Options{})
	rec := &hubhistory.Recorder{Database: url, HubName: hubName}
	for _, o := range opts {
		rec.Deployment, rec.Retention = o.deployment, o.retention
	}
	stopMgr, err := controlplane.StartManager(cp.Config, manager.Options{Scheme: mo.Scheme, Cache: mo.Cache}, func(mgr ctrl.Manager) error {
		return rec.SetupWithManager(t.Context(), mgr)
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			if err := stopMgr(); err != nil {
				t.Errorf("stopping the recorder: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// hubDeployment creates a Deployment standing for the hub's in a new
// namespace (no controller runs its pods).
func hubDeployment(t *testing.T) types.NamespacedName {
	t.Helper()
	c := suite.Get(t).Client
	labels := map[string]string{"app": "canopy-hub"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace(t, c), Name: "canopy-hub"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "hub", Image: "canopy"}}},
			},
		},
	}
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(d)
}

// recording returns the HistoryRecording condition of Deployment key.
func recording(t *testing.T, key types.NamespacedName) func() (appsv1.DeploymentCondition, error) {
	return func() (appsv1.DeploymentCondition, error) {
		d := &appsv1.Deployment{}
		if err := suite.Get(t).Client.Get(t.Context(), key, d); err != nil {
			return appsv1.DeploymentCondition{}, err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == hubhistory.ConditionHistoryRecording {
				return c, nil
			}
		}
		return appsv1.DeploymentCondition{}, nil
	}
}

// eventReasons returns the type and reason ("Warning DatabaseError") of
// every Event about Deployment key, oldest first.
func eventReasons(t *testing.T, key types.NamespacedName) func() ([]string, error) {
	return func() ([]string, error) {
		list := &eventsv1.EventList{}
		if err := suite.Get(t).Client.List(t.Context(), list, client.InNamespace(key.Namespace)); err != nil {
			return nil, err
		}
		slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Deployment" && e.Regarding.Name == key.Name {
				out = append(out, e.Type+" "+e.Reason)
			}
		}
		return out, nil
	}
}

// agent writes the replica status an agent reports.
type agent struct {
	t       *testing.T
	c       client.Client
	replica *policyv1.Policy
	events  int // how many events were reported in all
	pad     int // how many bytes of padding the messages of the next events carry
	padded  map[int]int
}

// newReplica creates the replica of root policies/<root> in a new cluster
// namespace, as the propagator does.
func newReplica(t *testing.T, root string) *agent {
	t.Helper()
	c := suite.Get(t).Client
	cluster := controlplane.Namespace(t, c)
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{
		Namespace: cluster, Name: "policies." + root,
		Labels: map[string]string{
			policyv1.RootPolicyLabel:       "policies." + root,
			policyv1.ClusterNameLabel:      cluster,
			policyv1.ClusterNamespaceLabel: cluster,
		},
	}, Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	return &agent{t: t, c: c, replica: p}
}

// state returns the state of event i: they alternate.
func state(i int) string {
	return []string{"NonCompliant", "Compliant"}[i%2]
}

// report adds n events of template cfg to the replica's history, keeping
// the newest HistoryLimit, as statussync does.
func (a *agent) report(n int) {
	a.t.Helper()
	p := a.replica
	if err := a.c.Get(a.t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
		a.t.Fatal(err)
	}
	var h []policyv1.ComplianceHistory
	if len(p.Status.Details) > 0 {
		h = p.Status.Details[0].History
	}
	for range n {
		i := a.events
		a.events++
		if a.pad > 0 {
			if a.padded == nil {
				a.padded = map[int]int{}
			}
			a.padded[i] = a.pad
		}
		h = append([]policyv1.ComplianceHistory{{
			LastTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Minute)),
			Message:       state(i) + "; " + a.message(i),
			EventName:     fmt.Sprintf("cfg.%d", i),
		}}, h...)
	}
	if len(h) > hubhistory.HistoryLimit {
		h = h[:hubhistory.HistoryLimit]
	}
	p.Status.Details = []policyv1.DetailsPerTemplate{{
		TemplateMeta: metav1.ObjectMeta{Name: "cfg"}, ComplianceState: policyv1.ComplianceState(state(a.events - 1)), History: h,
	}}
	p.Status.ComplianceState = p.Status.Details[0].ComplianceState
	if err := a.c.Status().Update(a.t.Context(), p); err != nil {
		a.t.Fatal(err)
	}
}

// message is the message of event i after its state.
func (a *agent) message(i int) string {
	return fmt.Sprintf("event %d", i) + strings.Repeat(".", a.padded[i])
}

// want returns the transitions of events [from, to) of a's replica.
func (a *agent) want(hubName string, from, to int) []history.Transition {
	var out []history.Transition
	root := a.replica.Labels[policyv1.RootPolicyLabel][len("policies."):]
	for i := from; i < to; i++ {
		out = append(out, history.Transition{
			Hub: hubName, Cluster: a.replica.Namespace, Policy: history.Policy{Namespace: "policies", Name: root},
			Template: "cfg", State: state(i), Message: a.message(i), At: base.Add(time.Duration(i) * time.Minute),
		})
	}
	return out
}

// stored returns what the store at url holds of a's cluster.
func stored(t *testing.T, url string, a *agent) func() (history.Result, error) {
	return func() (history.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := history.Open(ctx, url)
		if err != nil {
			return history.Result{}, err
		}
		defer s.Close()
		return s.Query(ctx, history.Query{Cluster: a.replica.Namespace})
	}
}

func transitions(r history.Result) []history.Transition { return r.Transitions }
func gaps(r history.Result) []history.Gap               { return r.Gaps }
