package olmsim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kinds the simulator moves.
var (
	SubscriptionGVK    = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	InstallPlanGVK     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "InstallPlan"}
	CSVGVK             = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	CatalogSourceGVK   = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "CatalogSource"}
	OperatorGroupGVK   = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OperatorGroup"}
	PackageManifestGVK = schema.GroupVersionKind{Group: "packages.operators.coreos.com", Version: "v1", Kind: "PackageManifest"}
)

// PackageManifestNamespace is where the simulator writes PackageManifests:
// OLM serves them in every namespace, and readers ask in this one.
const PackageManifestNamespace = "default"

// Package is an operator package of a catalog.
type Package struct {
	// Name is the package's name, a Subscription's spec.name.
	Name string
	// Catalog and CatalogNamespace name its CatalogSource.
	Catalog, CatalogNamespace string
	// DefaultChannel is the channel of Subscriptions that name none.
	DefaultChannel string
	// Channels are the CSV names of each channel, oldest first: the last
	// is the channel's head, what Subscriptions install.
	Channels map[string][]string
	// SuggestedNamespace is the namespace the PackageManifest suggests.
	SuggestedNamespace string
	// Dependencies are the packages this one requires: an InstallPlan for
	// it installs the head of their default channel too, and the
	// dependencies get Subscriptions of their own, as in OLM.
	Dependencies []string
	// Deprecation is the package's deprecation message in the
	// PackageManifest; empty when it is not deprecated.
	Deprecation string
	// ChannelDeprecations are the deprecation messages of channels, by
	// channel name.
	ChannelDeprecations map[string]string
	// BundleDeprecations are the deprecation messages of bundles, by CSV
	// name.
	BundleDeprecations map[string]string
}

// Simulator moves OLM's objects on one cluster (see the package doc).
type Simulator struct {
	// Client reads and writes the cluster, uncached.
	Client client.Client
	// Interval is the pause between two steps; zero means 50ms.
	Interval time.Duration

	mu       sync.Mutex
	packages map[string]*Package
	failing  map[string]string
}

// AddPackage adds p to its catalog: it creates the CatalogSource (READY)
// and the PackageManifest.
func (s *Simulator) AddPackage(ctx context.Context, p Package) error {
	s.mu.Lock()
	if s.packages == nil {
		s.packages = map[string]*Package{}
	}
	s.packages[p.Name] = &p
	s.mu.Unlock()
	catalog := newObject(CatalogSourceGVK, p.CatalogNamespace, p.Catalog)
	catalog.Object["spec"] = map[string]any{"sourceType": "grpc", "image": "example.com/catalog:latest"}
	err := s.Client.Create(ctx, catalog)
	if apierrors.IsAlreadyExists(err) { // another package of the same catalog
		err = s.Client.Get(ctx, client.ObjectKeyFromObject(catalog), catalog)
	}
	if err != nil {
		return fmt.Errorf("creating the CatalogSource %s: %w", p.Catalog, err)
	}
	catalog.Object["status"] = map[string]any{"connectionState": map[string]any{"lastObservedState": "READY"}}
	if err := s.Client.Status().Update(ctx, catalog); err != nil {
		return fmt.Errorf("making the CatalogSource %s ready: %w", p.Catalog, err)
	}
	return s.writePackageManifest(ctx, &p)
}

// Publish appends csv to channel of pkg: Subscriptions of that channel
// upgrade to it.
func (s *Simulator) Publish(ctx context.Context, pkg, channel, csv string) error {
	s.mu.Lock()
	p := s.packages[pkg]
	if p == nil {
		s.mu.Unlock()
		return fmt.Errorf("no package %s in the simulated catalogs", pkg)
	}
	p.Channels[channel] = append(p.Channels[channel], csv)
	cp := *p
	s.mu.Unlock()
	return s.writePackageManifest(ctx, &cp)
}

// Fail makes the CSV named csv fail its installation with message.
func (s *Simulator) Fail(csv, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing == nil {
		s.failing = map[string]string{}
	}
	s.failing[csv] = message
}

func (s *Simulator) writePackageManifest(ctx context.Context, p *Package) error {
	var channels []any
	for _, name := range slices.Sorted(maps.Keys(p.Channels)) {
		csvs := p.Channels[name]
		entries := make([]any, 0, len(csvs))
		for _, csv := range slices.Backward(csvs) { // OLM lists the head first
			entry := map[string]any{"name": csv}
			if msg, ok := p.BundleDeprecations[csv]; ok {
				entry["deprecation"] = map[string]any{"message": msg}
			}
			entries = append(entries, entry)
		}
		channel := map[string]any{"name": name, "currentCSV": csvs[len(csvs)-1], "entries": entries,
			"currentCSVDesc": map[string]any{"annotations": map[string]any{
				"operatorframework.io/suggested-namespace": p.SuggestedNamespace}}}
		if msg, ok := p.ChannelDeprecations[name]; ok {
			channel["deprecation"] = map[string]any{"message": msg}
		}
		channels = append(channels, channel)
	}
	pm := newObject(PackageManifestGVK, PackageManifestNamespace, p.Name)
	pm.Object["status"] = map[string]any{"packageName": p.Name, "catalogSource": p.Catalog,
		"catalogSourceNamespace": p.CatalogNamespace, "defaultChannel": p.DefaultChannel, "channels": channels}
	if p.Deprecation != "" {
		pm.Object["status"].(map[string]any)["deprecation"] = map[string]any{"message": p.Deprecation}
	}
	err := s.Client.Create(ctx, pm)
	if apierrors.IsAlreadyExists(err) {
		old := newObject(PackageManifestGVK, PackageManifestNamespace, p.Name)
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
			return err
		}
		pm.SetResourceVersion(old.GetResourceVersion())
		err = s.Client.Update(ctx, pm)
	}
	return err
}

// Run steps the simulation until ctx ends. A failed step is retried at
// the next one.
func (s *Simulator) Run(ctx context.Context) {
	interval := s.Interval
	if interval == 0 {
		interval = 50 * time.Millisecond
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			_ = s.Step(ctx) // conflicts and races with the tests are retried
		}
	}
}

// Step moves every Subscription, InstallPlan and CSV of the cluster one
// step on.
func (s *Simulator) Step(ctx context.Context) error {
	var errs []error
	for _, step := range []struct {
		gvk schema.GroupVersionKind
		fn  func(context.Context, *unstructured.Unstructured) error
	}{{SubscriptionGVK, s.subscription}, {InstallPlanGVK, s.installPlan}, {CSVGVK, s.csv}} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(step.gvk.GroupVersion().WithKind(step.gvk.Kind + "List"))
		if err := s.Client.List(ctx, list); err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range list.Items {
			if list.Items[i].GetDeletionTimestamp() == nil {
				errs = append(errs, step.fn(ctx, &list.Items[i]))
			}
		}
	}
	return errors.Join(errs...)
}

func newObject(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }
