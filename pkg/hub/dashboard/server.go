package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultRefreshInterval is how often the pages poll the API.
const DefaultRefreshInterval = 2 * time.Second

// shutdownTimeout bounds how long open requests may finish on shutdown.
const shutdownTimeout = 10 * time.Second

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Server serves the dashboard. It is a manager Runnable that needs no leader.
type Server struct {
	// Address is the TCP address to listen on, e.g. "127.0.0.1:8090".
	Address string
	// Reader reads root policies; the manager's cached client.
	Reader client.Reader
	// APIReader lists the replicas of one policy with their compliance
	// history, which the hub's cache trims; the manager's API reader.
	APIReader client.Reader
	// RefreshInterval is how often the pages poll; DefaultRefreshInterval
	// when zero.
	RefreshInterval time.Duration
	// AllowedHosts are host names, besides localhost and IP addresses, that
	// requests may name in their Host header (for a proxy in front).
	AllowedHosts []string
	// History reads the compliance history for /api/history; nil when the
	// hub records none.
	History *HistoryReader
	// Fleet reads every hub's compliance for /fleet; nil without --fleet.
	Fleet *FleetReader

	pages *template.Template
	log   logr.Logger
}

// SetupWithManager reads through mgr's cache and API reader and adds the
// server to mgr, which starts it and stops it on shutdown.
func (s *Server) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	s.Reader, s.APIReader = mgr.GetClient(), mgr.GetAPIReader()
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding the dashboard: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every hub replica serves the dashboard.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is cancelled, then lets open requests finish.
func (s *Server) Start(ctx context.Context) error {
	s.log = ctrl.LoggerFrom(ctx).WithName("dashboard")
	handler, err := s.Handler()
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.Address)
	if err != nil {
		return fmt.Errorf("listening for the dashboard: %w", err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		stopped <- srv.Shutdown(shutdownCtx)
	}()
	s.log.Info("Serving the dashboard", "address", ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the dashboard: %w", err)
	}
	if err := <-stopped; err != nil {
		return fmt.Errorf("stopping the dashboard: %w", err)
	}
	return nil
}

// Handler returns the dashboard's HTTP handler: GET (and HEAD) only, every
// answer with the security headers.
func (s *Server) Handler() (http.Handler, error) {
	if s.pages == nil {
		pages, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
		if err != nil {
			return nil, fmt.Errorf("parsing the dashboard templates: %w", err)
		}
		s.pages = pages
	}
	if s.log.GetSink() == nil {
		s.log = ctrl.Log.WithName("dashboard")
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("reading the dashboard assets: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.matrixPage)
	mux.HandleFunc("GET /policies/{namespace}/{name}", s.policyPage)
	mux.HandleFunc("GET /api/matrix", s.matrixAPI)
	mux.HandleFunc("GET /api/policies/{namespace}/{name}", s.policyAPI)
	mux.HandleFunc("GET /policysets/{namespace}/{name}", s.setPage)
	mux.HandleFunc("GET /api/policysets/{namespace}/{name}", s.setAPI)
	mux.HandleFunc("GET /api/history/{kind}/{namespace}/{name}", s.historyAPI)
	mux.HandleFunc("GET /clusters/{cluster}", s.clusterPage)
	mux.HandleFunc("GET /api/charts/policies/{namespace}/{name}", s.policyChartAPI)
	mux.HandleFunc("GET /api/charts/clusters/{cluster}", s.clusterChartAPI)
	mux.HandleFunc("GET /fleet", s.fleetPage)
	mux.HandleFunc("GET /api/fleet", s.fleetAPI)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return s.guardHost(securityHeaders(mux)), nil
}

// guardHost refuses requests for other host names than localhost, IP
// addresses and AllowedHosts. Note: this defeats DNS rebinding, where a
// site the user visits makes its own name resolve to the dashboard's
// address (a port-forward on localhost, say) and reads it as same-origin.
func (s *Server) guardHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
		if host != "localhost" && !strings.HasSuffix(host, ".localhost") && net.ParseIP(host) == nil &&
			!slices.Contains(s.AllowedHosts, host) {
			http.Error(w, "the dashboard answers to localhost and IP addresses only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders forbids framing, sniffing, inline script and style, and
// loading anything from elsewhere than the dashboard itself.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; "+
			"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "+
			"form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refreshMillis() int64 {
	if s.RefreshInterval <= 0 {
		return DefaultRefreshInterval.Milliseconds()
	}
	return s.RefreshInterval.Milliseconds()
}
