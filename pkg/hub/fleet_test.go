package hub_test

import (
	"net/http"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
)

// TestSetupFleetNeedsPostgres: an assembly that asks for the fleet view
// without a PostgreSQL history database, or without the dashboard, is
// refused before any controller is set up (the manager never reaches an
// API server).
func TestSetupFleetNeedsPostgres(t *testing.T) {
	for name, tc := range map[string]struct {
		opts hub.Options
		want error
	}{
		"SQLite":       {hub.Options{Fleet: true, DashboardAddress: "127.0.0.1:0", HistoryDatabase: filepath.Join(t.TempDir(), "history.db")}, history.ErrFleetNeedsPostgres},
		"no database":  {hub.Options{Fleet: true, DashboardAddress: "127.0.0.1:0"}, history.ErrFleetNeedsPostgres},
		"no dashboard": {hub.Options{Fleet: true, HistoryDatabase: "postgres://canopy@db/history"}, dashboard.ErrFleetNeedsDashboard},
	} {
		g := NewWithT(t)
		mo := hub.ManagerOptions(tc.opts)
		mo.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			m := meta.NewDefaultRESTMapper(nil)
			m.Add(policyv1.GroupVersion.WithKind(policyv1.PolicyKind), meta.RESTScopeNamespace)
			return m, nil
		}
		mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, mo)
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(hub.Setup(t.Context(), mgr, tc.opts)).To(MatchError(tc.want), name)
	}
}
