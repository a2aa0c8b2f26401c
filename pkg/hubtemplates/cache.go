package hubtemplates

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/templating"
)

var (
	secretGVK         = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	serviceAccountGVK = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
)

// Cache resolves the hub templates of replicas and remembers each
// replica's last resolution until something it read changes. The
// DynamicWatchers' events name a replica: its resolution is forgotten and
// Options.Changed told of its root, whose reconcile resolves that replica
// alone again. Nothing survives a restart; the first reconcile of each root
// resolves its replicas anew. A nil Cache resolves nothing.
//
// It is a Runnable: Start runs the watchers until its context ends.
type Cache struct {
	opts Options
	pool *resolverPool

	mu     sync.Mutex
	states map[string]map[string]*replicaState // replica name → cluster → state
}

// Options configure a Cache.
type Options struct {
	// Config connects to the hub. Template lookups, the encryption keys and
	// the ServiceAccounts are read and watched through it.
	Config *rest.Config
	// Client creates the encryption key Secrets and requests the tokens of
	// ServiceAccounts.
	Client client.Client
	// Reader reads a key Secret another resolution has just created.
	Reader client.Reader
	// Changed is told of the root policy of a replica whose templates read
	// an object that changed: reconciling the root resolves the replica
	// again. It must not block past the end of ctx.
	Changed func(ctx context.Context, root types.NamespacedName)
	// Log receives what the resolvers of ServiceAccounts do on their own.
	Log logr.Logger
	// Resolved, when set, is told of each resolution of a replica of root
	// (remembered ones are not resolutions), for metrics.
	Resolved func(root types.NamespacedName)
	// ServiceAccountResolver, when set, is told when the resolver of a
	// ServiceAccount starts (true) and stops (false), for metrics.
	ServiceAccountResolver func(sa types.NamespacedName, running bool)
	// DenylistFunctions are the template functions every hub template is
	// denied besides those the library always denies: a template that
	// calls one fails with the library's ErrDenylistedFunctionUsed.
	DenylistFunctions []string
}

// replicaState is what the Cache remembers of one replica.
type replicaState struct {
	// epoch counts the watch events of the replica.
	epoch uint64
	// last is the last resolution, valid while the epoch it was computed
	// in is current and the root's inputs are the same.
	last *cachedResolution
}

type cachedResolution struct {
	inputs string
	epoch  uint64
	result Result
}

// NewCache returns a Cache of the hub opts.Config connects to.
func NewCache(opts Options) (*Cache, error) {
	templating.QuietLibraryLog()
	opts.DenylistFunctions = templating.Denylist(opts.DenylistFunctions)
	h := &Cache{opts: opts, states: map[string]map[string]*replicaState{}}
	pool, err := newResolverPool(opts.Config, opts.Client, watchEvents{h})
	if err != nil {
		return nil, err
	}
	pool.notify = h.changed
	pool.log = opts.Log
	pool.running = opts.ServiceAccountResolver
	h.pool = pool
	return h, nil
}

// Start runs the watchers until ctx ends.
func (h *Cache) Start(ctx context.Context) error {
	return h.pool.run(ctx)
}

// watchEvents receives the DynamicWatchers' events for h.
type watchEvents struct{ h *Cache }

// Reconcile receives a DynamicWatcher's event: id is the replica whose
// templates read the object that changed.
func (w watchEvents) Reconcile(ctx context.Context, id depclient.ObjectIdentifier) (reconcile.Result, error) {
	h := w.h
	h.invalidate(id)
	root, ok := replica.RootOf(id.Name)
	if ok && h.opts.Changed != nil {
		h.opts.Changed(ctx, root)
	}
	return reconcile.Result{}, nil
}

// changed is Reconcile for the replicas of a resolver that stopped.
func (h *Cache) changed(id depclient.ObjectIdentifier) {
	h.pool.mu.Lock()
	ctx := h.pool.ctx
	h.pool.mu.Unlock()
	if ctx != nil {
		_, _ = watchEvents{h}.Reconcile(ctx, id)
	}
}

// invalidate forgets the last resolution of replica id.
func (h *Cache) invalidate(id depclient.ObjectIdentifier) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.states[id.Name][id.Namespace]; st != nil {
		st.epoch++
	}
}

// Root is what the resolutions of the replicas of one root share,
// computed once per reconcile of the root.
type Root struct {
	*policyv1.Policy
	// resolve is whether the root has hub templates to resolve.
	resolve bool
	// inputs fingerprints the root (resolutionInputs).
	inputs string
}

// NewRoot returns the Root of root.
func NewRoot(root *policyv1.Policy) Root {
	tr := Root{Policy: root, resolve: HasHubTemplates(root)}
	if tr.resolve {
		tr.inputs = resolutionInputs(root)
	}
	return tr
}

// Resolve returns the resolution of the hub templates of desired, the
// replica of root that replica.Build made, whose current version is
// existing (nil if none). It returns the last resolution when nothing it
// read changed since.
func (h *Cache) Resolve(ctx context.Context, root Root, desired, existing *policyv1.Policy) Result {
	if h == nil {
		return Result{}
	}
	key := client.ObjectKeyFromObject(desired)
	if !root.resolve {
		h.forget(ctx, key)
		return Result{}
	}
	last, epoch, ok := h.last(key, root.inputs)
	if ok {
		return last
	}
	res := h.resolveNow(ctx, root.Policy, desired, existing)
	if h.opts.Resolved != nil {
		h.opts.Resolved(types.NamespacedName{Namespace: root.Namespace, Name: root.Name})
	}
	if res.Retry == nil {
		h.remember(key, root.inputs, epoch, res)
	}
	return res
}

// last returns the remembered resolution of replica key if it is still
// valid, and the current epoch of the replica.
func (h *Cache) last(key types.NamespacedName, inputs string) (Result, uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	byCluster := h.states[key.Name]
	if byCluster == nil {
		byCluster = map[string]*replicaState{}
		h.states[key.Name] = byCluster
	}
	st := byCluster[key.Namespace]
	if st == nil {
		st = &replicaState{}
		byCluster[key.Namespace] = st
	}
	if st.last != nil && st.last.epoch == st.epoch && st.last.inputs == inputs {
		return st.last.result, st.epoch, true
	}
	return Result{}, st.epoch, false
}

func (h *Cache) remember(key types.NamespacedName, inputs string, epoch uint64, res Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.states[key.Name][key.Namespace]; st != nil {
		st.last = &cachedResolution{inputs: inputs, epoch: epoch, result: res}
	}
}

// Retain forgets the replicas of replicaName on clusters other than keep,
// and stops their watches.
func (h *Cache) Retain(ctx context.Context, replicaName string, keep sets.Set[string]) {
	if h == nil {
		return
	}
	h.mu.Lock()
	var gone []types.NamespacedName
	for cluster := range h.states[replicaName] {
		if !keep.Has(cluster) {
			gone = append(gone, types.NamespacedName{Namespace: cluster, Name: replicaName})
		}
	}
	h.mu.Unlock()
	for _, key := range gone {
		h.forget(ctx, key)
	}
}

// forget drops what the Cache holds for replica key: its resolution and
// its watches.
func (h *Cache) forget(ctx context.Context, key types.NamespacedName) {
	h.mu.Lock()
	_, known := h.states[key.Name][key.Namespace]
	delete(h.states[key.Name], key.Namespace)
	if len(h.states[key.Name]) == 0 {
		delete(h.states, key.Name)
	}
	h.mu.Unlock()
	if !known {
		return
	}
	if err := h.pool.release(ctx, replicaWatcher(key)); err != nil {
		logf.FromContext(ctx).Error(err, "Failed to stop the watches of a replica's hub templates", "replica", key)
	}
}

// resolveNow resolves the hub templates of desired in one query batch of
// the replica on the hub's watcher (and one on its ServiceAccount's), so
// that what they stopped reading is no longer watched.
func (h *Cache) resolveNow(ctx context.Context, root, desired, existing *policyv1.Policy) Result {
	if err := h.pool.ready(ctx); err != nil {
		return Result{Retry: err, Hold: true}
	}
	release, err := h.pool.life.Hold(ctx)
	if err != nil {
		return Result{Retry: &transientError{fmt.Errorf("holding the hub templates' watcher: %w", err)}, Hold: true}
	}
	defer release()
	id := replicaWatcher(client.ObjectKeyFromObject(desired))
	end, err := startBatch(ctx, h.pool.watcher, id)
	if err != nil {
		return Result{Retry: err, Hold: true}
	}
	defer end()
	var sa types.NamespacedName
	if name := serviceAccountOf(root); name != "" {
		sa = types.NamespacedName{Namespace: root.Namespace, Name: name}
	}
	resolver, err := h.pool.acquire(ctx, id, sa)
	if err != nil {
		return h.resolverFailed(id, sa, desired, err)
	}
	if sa.Name != "" {
		endSA, err := startBatch(ctx, resolver, id)
		if err != nil {
			return Result{Retry: err, Hold: true}
		}
		defer endSA()
	}
	run := &templateRun{
		resolver: resolver,
		options:  resolveOptions(root, desired.Namespace),
		context:  newTemplateContext(root, desired.Namespace),
		key:      func() ([]byte, error) { return h.encryptionKey(ctx, id, desired.Namespace) },
	}
	run.options.Watcher = &id
	run.options.DenylistFunctions = h.opts.DenylistFunctions
	run.read = func() ([]unstructured.Unstructured, error) { return resolver.ListWatchedFromCache(id) }
	if existing != nil {
		run.iv = existing.Annotations[templating.IVAnnotation]
	}
	return run.run(desired.Spec.PolicyTemplates)
}

// resolverFailed is the outcome when the resolver of sa did not start: a
// missing ServiceAccount is watched, so that its creation resolves the
// replica again; other failures are retried.
func (h *Cache) resolverFailed(id depclient.ObjectIdentifier, sa types.NamespacedName, desired *policyv1.Policy, err error) Result {
	if isTransient(err) {
		return Result{Retry: err, Hold: true}
	}
	out := failAll(desired.Spec.PolicyTemplates, err)
	var missing *serviceAccountMissingError
	if !errors.As(err, &missing) {
		out.Retry = err
	} else if _, werr := h.pool.watcher.Get(id, serviceAccountGVK, sa.Namespace, sa.Name); werr != nil {
		return Result{Retry: fmt.Errorf("watching service account %s: %w", sa, werr), Hold: true}
	}
	return out
}

// batcher starts and ends query batches: a DynamicWatcher or a resolver.
type batcher interface {
	StartQueryBatch(depclient.ObjectIdentifier) error
	EndQueryBatch(depclient.ObjectIdentifier) error
}

// startBatch starts a query batch of id on b and returns its end.
func startBatch(ctx context.Context, b batcher, id depclient.ObjectIdentifier) (func(), error) {
	if err := b.StartQueryBatch(id); err != nil {
		return nil, &transientError{fmt.Errorf("starting a query batch for %s: %w", id.Name, err)}
	}
	return func() {
		if err := b.EndQueryBatch(id); err != nil {
			logf.FromContext(ctx).Error(err, "Failed to end a query batch of hub templates", "replica", id.Name)
		}
	}, nil
}

// encryptionKey returns the AES key of cluster, read through the hub's
// watcher in the batch of replica id (a new key resolves the replica
// again), and created when missing.
func (h *Cache) encryptionKey(ctx context.Context, id depclient.ObjectIdentifier, cluster string) ([]byte, error) {
	secret, err := h.pool.watcher.Get(id, secretGVK, cluster, templating.EncryptionKeySecret)
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", cluster, templating.EncryptionKeySecret, err)
	}
	if secret != nil {
		return keyOf(secret)
	}
	key, err := GenerateEncryptionKey()
	if err != nil {
		return nil, err
	}
	err = h.opts.Client.Create(ctx, newEncryptionKeySecret(cluster, key, time.Now()))
	if apierrors.IsAlreadyExists(err) {
		current := &corev1.Secret{}
		if err := h.opts.Reader.Get(ctx, types.NamespacedName{Namespace: cluster, Name: templating.EncryptionKeySecret}, current); err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", cluster, templating.EncryptionKeySecret, err)
		}
		return validKey(current.Data[templating.EncryptionKeyField], cluster)
	} else if err != nil {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", cluster, templating.EncryptionKeySecret, err)
	}
	logf.FromContext(ctx).Info("Created the encryption key of a managed cluster", "secret", types.NamespacedName{Namespace: cluster, Name: templating.EncryptionKeySecret})
	return key, nil
}

// keyOf returns the key of a key Secret as the watcher holds it.
func keyOf(secret *unstructured.Unstructured) ([]byte, error) {
	encoded, _, _ := unstructured.NestedString(secret.Object, "data", templating.EncryptionKeyField)
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("the Secret %s/%s: field %s is not base64", secret.GetNamespace(), secret.GetName(), templating.EncryptionKeyField)
	}
	return validKey(key, secret.GetNamespace())
}

func validKey(key []byte, cluster string) ([]byte, error) {
	if len(key) != keySize {
		return nil, fmt.Errorf("the Secret %s/%s: field %s holds no AES-256 key (%d bytes); delete the Secret to have a new key generated",
			cluster, templating.EncryptionKeySecret, templating.EncryptionKeyField, len(key))
	}
	return key, nil
}

// replicaWatcher identifies replica key to the DynamicWatchers.
func replicaWatcher(key types.NamespacedName) depclient.ObjectIdentifier {
	return depclient.ObjectIdentifier{
		Group: policyv1.GroupName, Version: policyv1.GroupVersion.Version, Kind: policyv1.PolicyKind,
		Namespace: key.Namespace, Name: key.Name,
	}
}

// resolutionInputs fingerprints what of root a resolution depends on,
// beyond the objects it watches: its spec (generation), its labels and
// annotations (.PolicyMetadata; TriggerUpdateAnnotation), its identity.
func resolutionInputs(root *policyv1.Policy) string {
	raw, _ := json.Marshal(struct {
		UID         types.UID
		Generation  int64
		Labels      map[string]string
		Annotations map[string]string
	}{root.UID, root.Generation, root.Labels, root.Annotations}) // Note: maps marshal in key order
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
