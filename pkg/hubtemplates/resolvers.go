package hubtemplates

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/canopy-policy/canopy/pkg/depwatch"
)

// Lifetime and renewal of the ServiceAccount tokens of hub template
// resolvers, as OCM's: two hours, renewed 5 to 10 minutes before expiry.
const (
	tokenLifetime   = 2 * time.Hour
	tokenRenewAhead = 5 * time.Minute
	tokenJitter     = 5 * time.Minute
)

// serviceAccountMissingError is the failure to start the resolver of a
// ServiceAccount that does not exist, with OCM's message.
type serviceAccountMissingError struct{ sa types.NamespacedName }

func (e *serviceAccountMissingError) Error() string {
	return fmt.Sprintf("the service account in hubTemplateOptions.serviceAccountName (%s) does not exist", e.sa)
}

// resolverPool holds the template resolvers of the hub: the hub's own, and
// one per ServiceAccount that spec.hubTemplateOptions.serviceAccountName
// names, each with its own DynamicWatcher authenticated as that
// ServiceAccount. A ServiceAccount's resolver starts with the first
// replica that uses it and stops with the last; each replica's watches are
// in the resolver it last used.
type resolverPool struct {
	// base is the hub's configuration; a ServiceAccount's resolver keeps
	// only its server and TLS settings.
	base *rest.Config
	// tokens requests ServiceAccount tokens.
	tokens client.Client
	// events receives the watch events of every DynamicWatcher.
	events depclient.Reconciler
	// notify is told of the replicas whose resolver stopped unexpectedly.
	notify func(depclient.ObjectIdentifier)
	// log receives the failures of the ServiceAccounts' resolvers.
	log logr.Logger
	// running, when set, is told when a ServiceAccount's resolver starts
	// (true) and stops (false).
	running func(sa types.NamespacedName, running bool)

	// watcher is the hub's own DynamicWatcher: it serves the hub's resolver
	// and reads the encryption keys and missing ServiceAccounts.
	watcher  depclient.DynamicWatcher
	resolver *templates.TemplateResolver
	// life runs watcher: resolutions hold it, so that it never stops
	// during a query batch (a watch started then would outlive it).
	life *depwatch.Lifecycle

	ctx context.Context //nolint:containedctx // the life of the ServiceAccounts' resolvers, set by run
	wg  sync.WaitGroup

	mu    sync.Mutex
	sas   map[types.NamespacedName]*saResolver
	refs  map[types.NamespacedName]int
	users map[depclient.ObjectIdentifier]types.NamespacedName // replica → ServiceAccount; zero: the hub's
}

// saResolver is the resolver of one ServiceAccount.
type saResolver struct {
	resolver *templates.TemplateResolver
	cancel   context.CancelFunc
	stopped  atomic.Bool
}

func newResolverPool(base *rest.Config, tokens client.Client, events depclient.Reconciler) (*resolverPool, error) {
	watcher, err := depwatch.NewWatcher(base, events, depclient.Options{DisableInitialReconcile: true, EnableCache: true})
	if err != nil {
		return nil, fmt.Errorf("creating the hub templates' watcher: %w", err)
	}
	resolver, err := templates.NewResolverWithDynamicWatcher(watcher, hubResolverConfig(true))
	if err != nil {
		return nil, fmt.Errorf("creating the hub templates' resolver: %w", err)
	}
	return &resolverPool{
		base: base, tokens: tokens, events: events, watcher: watcher, resolver: resolver,
		life:  depwatch.New(watcher),
		sas:   map[types.NamespacedName]*saResolver{},
		refs:  map[types.NamespacedName]int{},
		users: map[depclient.ObjectIdentifier]types.NamespacedName{},
	}, nil
}

// run runs the hub's watcher, and the ServiceAccounts' resolvers started
// meanwhile, until ctx ends.
func (p *resolverPool) run(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	err := p.life.Start(ctx)
	p.wg.Wait()
	p.mu.Lock()
	for sa := range p.sas {
		p.report(sa, false)
	}
	p.mu.Unlock()
	return err
}

// ready waits until the hub's watcher runs.
func (p *resolverPool) ready(ctx context.Context) error {
	select {
	case <-p.watcher.Started():
		return nil
	case <-ctx.Done():
		return &transientError{fmt.Errorf("waiting for the hub templates' watcher: %w", ctx.Err())}
	}
}

// acquire returns the resolver replica id resolves with: the hub's when sa
// is the zero name, else the ServiceAccount's, started if needed. When
// the replica used another resolver before, its watches there are removed.
func (p *resolverPool) acquire(ctx context.Context, id depclient.ObjectIdentifier, sa types.NamespacedName) (*templates.TemplateResolver, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, known := p.users[id]
	if known && prev != sa {
		p.dropLocked(ctx, id, prev)
		known = false
	}
	if sa == (types.NamespacedName{}) {
		p.users[id] = sa
		return p.resolver, nil
	}
	r := p.sas[sa]
	if r == nil || r.stopped.Load() {
		var err error
		if r, err = p.start(ctx, sa); err != nil {
			return nil, err
		}
		p.sas[sa] = r
	}
	if !known {
		p.users[id] = sa
		p.refs[sa]++
	}
	return r.resolver, nil
}

// release removes the watches of replica id and stops the resolver of its
// ServiceAccount when no other replica uses it.
func (p *resolverPool) release(ctx context.Context, id depclient.ObjectIdentifier) error {
	p.mu.Lock()
	if sa, known := p.users[id]; known {
		p.dropLocked(ctx, id, sa)
	}
	p.mu.Unlock()
	release, ok := p.life.TryHold()
	if !ok {
		return nil // not started, or stopped: it holds no watch of id
	}
	defer release()
	if err := p.watcher.RemoveWatcher(id); err != nil && !errors.Is(err, depclient.ErrNotStarted) {
		return fmt.Errorf("removing the watches of %s: %w", id.Name, err)
	}
	return nil
}

// dropLocked forgets that replica id uses the resolver of sa. p.mu is held.
func (p *resolverPool) dropLocked(ctx context.Context, id depclient.ObjectIdentifier, sa types.NamespacedName) {
	delete(p.users, id)
	if sa == (types.NamespacedName{}) {
		return // the hub's watches of id end with its next query batch or release
	}
	r := p.sas[sa]
	if r != nil && !r.stopped.Load() {
		if err := r.resolver.UncacheWatcher(id); err != nil && !errors.Is(err, depclient.ErrNotStarted) {
			logf.FromContext(ctx).Error(err, "Failed to remove the watches of a replica", "replica", id.Name, "serviceAccount", sa)
		}
	}
	if p.refs[sa]--; p.refs[sa] > 0 {
		return
	}
	delete(p.refs, sa)
	if r != nil {
		delete(p.sas, sa)
		r.stopped.Store(true)
		r.cancel()
		p.report(sa, false)
		logf.FromContext(ctx).Info("Stopped the hub template resolver of a service account no policy uses any more", "serviceAccount", sa)
	}
}

// start starts the resolver of sa: a token, a DynamicWatcher using it, and
// the token's renewal. p.mu is held.
func (p *resolverPool) start(ctx context.Context, sa types.NamespacedName) (*saResolver, error) {
	if p.ctx == nil {
		return nil, &transientError{errors.New("the hub templates' watcher is not running")}
	}
	token, expiry, err := p.requestToken(ctx, sa)
	if apierrors.IsNotFound(err) {
		return nil, &serviceAccountMissingError{sa}
	} else if err != nil {
		return nil, fmt.Errorf("failed to set up the template resolver for the service account in "+
			"hubTemplateOptions.serviceAccountName (%s): %w", sa, err)
	}
	cfg := rest.AnonymousClientConfig(p.base)
	bearer := &bearerToken{}
	bearer.set(token)
	cfg.WrapTransport = bearer.wrap
	watcher, err := depwatch.NewWatcher(cfg, p.events, depclient.Options{DisableInitialReconcile: true, EnableCache: true})
	if err != nil {
		return nil, fmt.Errorf("failed to set up the template resolver for the service account in "+
			"hubTemplateOptions.serviceAccountName (%s): %w", sa, err)
	}
	resolver, err := templates.NewResolverWithDynamicWatcher(watcher, hubResolverConfig(true))
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(p.ctx)
	r := &saResolver{resolver: resolver, cancel: cancel}
	p.wg.Go(func() { p.runWatcher(rctx, sa, r, watcher) })
	p.wg.Go(func() { p.renewToken(rctx, sa, r, bearer, expiry) })
	select {
	case <-watcher.Started():
	case <-rctx.Done():
		return nil, &transientError{fmt.Errorf("starting the watcher of service account %s: %w", sa, rctx.Err())}
	}
	logf.FromContext(ctx).Info("Started a hub template resolver for a service account", "serviceAccount", sa)
	p.report(sa, true)
	return r, nil
}

// runWatcher runs the DynamicWatcher of r until r stops.
func (p *resolverPool) runWatcher(ctx context.Context, sa types.NamespacedName, r *saResolver, watcher depclient.DynamicWatcher) {
	err := watcher.Start(ctx)
	if ctx.Err() == nil {
		p.failed(sa, r, fmt.Errorf("its watcher stopped: %w", err))
	}
}

// renewToken renews the token of r before it expires, until r stops.
func (p *resolverPool) renewToken(ctx context.Context, sa types.NamespacedName, r *saResolver, bearer *bearerToken, expiry time.Time) {
	for {
		left := time.Until(expiry)
		// Note: never sooner than half the time left, should a token be short-lived.
		wait := max(left-tokenRenewAhead-rand.N(tokenJitter), left/2, 10*time.Second) // #nosec G404 -- spreads renewals
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		token, next, err := p.requestToken(ctx, sa)
		if err != nil {
			if ctx.Err() == nil {
				p.failed(sa, r, fmt.Errorf("renewing its token: %w", err))
			}
			return
		}
		bearer.set(token)
		expiry = next
	}
}

// failed stops r and has the replicas that used it resolved again, which
// starts a new resolver for sa.
func (p *resolverPool) failed(sa types.NamespacedName, r *saResolver, err error) {
	p.log.Error(err, "The hub template resolver of a service account stopped", "serviceAccount", sa)
	p.mu.Lock()
	r.stopped.Store(true)
	r.cancel()
	if p.sas[sa] == r {
		p.report(sa, false)
	}
	var users []depclient.ObjectIdentifier
	for id, used := range p.users {
		if used == sa {
			users = append(users, id)
		}
	}
	p.mu.Unlock()
	for _, id := range users {
		p.notify(id)
	}
}

// report tells p.running that the resolver of sa started or stopped.
func (p *resolverPool) report(sa types.NamespacedName, running bool) {
	if p.running != nil {
		p.running(sa, running)
	}
}

// requestToken asks the API server for a token of sa.
func (p *resolverPool) requestToken(ctx context.Context, sa types.NamespacedName) (string, time.Time, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds())),
	}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name}}
	if err := p.tokens.SubResource("token").Create(ctx, account, req); err != nil {
		return "", time.Time{}, err
	}
	return req.Status.Token, req.Status.ExpirationTimestamp.Time, nil
}

// bearerToken authenticates requests with a token that renewToken
// replaces in memory; it is never written to disk.
type bearerToken struct{ token atomic.Pointer[string] }

func (b *bearerToken) set(token string) { b.token.Store(&token) }

func (b *bearerToken) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+*b.token.Load())
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
