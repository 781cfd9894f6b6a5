package controllers

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/leadergate"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/owners"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/syncinformer"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// CacheOptions returns the cache settings the controllers need: Leases are
// watched in kube-node-lease only, what nothing here reads (managed fields,
// and the image lists in Node status) is dropped from every cached object,
// every informer lists in pages, then watches, and those of Nodes and
// Leases call their handlers in line (a handler added to either must not
// block).
func CacheOptions() cache.Options {
	return MergeCacheOptions(cache.Options{})
}

// MergeCacheOptions returns the caller's cache settings with what the
// controllers need added: Leases watched in kube-node-lease (added to the
// caller's namespaces for Leases, if it restricts them), Pods in every
// namespace (if the caller restricts the default namespaces), and, unless
// the caller has a transform of its own, managed fields and Node image
// lists dropped from every cached object (see StripUnread), and, unless
// the caller has an informer constructor of its own, informers that list
// in pages, then watch (stripping each page as it comes, unless the caller
// transforms anything itself), and Node and Lease ones that call their
// handlers in line, without a goroutine hand-off per event and handler (a
// handler added to either must not block). What the caller set otherwise
// is kept. A setting the controllers cannot work with (Nodes, Leases or
// Pods narrowed by a selector, or Pods to some namespaces) is refused by
// NewManager.
func MergeCacheOptions(o cache.Options) cache.Options {
	var strip toolscache.TransformFunc
	if !transforms(o) {
		strip = StripUnread
	}
	if o.DefaultTransform == nil {
		o.DefaultTransform = StripUnread
	}
	if o.NewInformer == nil {
		o.NewInformer = newInformer(strip)
	}
	byObject := maps.Clone(o.ByObject)
	if byObject == nil {
		byObject = map[client.Object]cache.ByObject{}
	}
	lease, leaseBy := find(byObject, &coordinationv1.Lease{})
	switch {
	case lease == nil:
		byObject[&coordinationv1.Lease{}] = cache.ByObject{Namespaces: map[string]cache.Config{corev1.NamespaceNodeLease: {}}}
	case len(leaseBy.Namespaces) > 0:
		if _, ok := leaseBy.Namespaces[corev1.NamespaceNodeLease]; !ok {
			if _, all := leaseBy.Namespaces[cache.AllNamespaces]; !all {
				leaseBy.Namespaces = maps.Clone(leaseBy.Namespaces)
				leaseBy.Namespaces[corev1.NamespaceNodeLease] = cache.Config{}
				byObject[lease] = leaseBy
			}
		}
	}
	if pod, _ := find(byObject, &corev1.Pod{}); pod == nil && len(o.DefaultNamespaces) > 0 {
		byObject[&corev1.Pod{}] = cache.ByObject{Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}}
	}
	o.ByObject = byObject
	return o
}

// StripUnread is the cache transform CacheOptions sets: it drops from each
// object what the controllers never read, before the informer keeps it.
// Managed fields go from every object but a Node in trouble (its Ready
// condition Unknown, or a node lifecycle taint on it), which keeps, trimmed
// to that, who last wrote its Ready condition and its taints: the
// controllers tell from it when another controller marks or taints nodes
// beside them. From a Node go the images its kubelet lists in its status
// (by default up to 50, each with its names and size: most of a real
// Node's bytes). Only the cached copy is trimmed: the controllers write
// Nodes with patches of what they change, so nothing dropped here is ever
// written back, and a Get from the cache returns Nodes without images to
// any other code that shares it.
func StripUnread(obj any) (any, error) {
	if node, ok := obj.(*corev1.Node); ok {
		node.Status.Images = nil
		if node.ManagedFields != nil {
			node.ManagedFields = owners.Trim(node, node.ManagedFields)
		}
		return obj, nil
	}
	if o, err := meta.Accessor(obj); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// newInformer returns the cache's informer constructor. Its informers of
// Nodes and Leases call their handlers in line (package syncinformer): a
// Lease renewal, the bulk of the events the controllers hear, then costs
// no goroutine hand-off. Every other kind gets client-go's shared
// informer. Each lists, then watches, rather than streaming its list: a
// replica that starts while a zone's pods are written, a new leader most
// of all, must not wait for the apiserver's writes to calm before its
// caches sync. The first list is consistent and in pages, each passed
// through strip (if not nil) as it comes (syncinformer.ListInPages), so
// that a fleet's image lists are never all held at once.
func newInformer(strip toolscache.TransformFunc) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if w, ok := lw.(*toolscache.ListWatch); ok {
			lw = syncinformer.ListInPages(w, strip)
		}
		switch obj.(type) {
		case *corev1.Node, *coordinationv1.Lease:
			return syncinformer.New(lw, obj, resync, indexers)
		default:
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		}
	}
}

// transforms reports whether the caller's settings have a transform of
// their own: by default, by object, or by namespace within either.
func transforms(o cache.Options) bool {
	if o.DefaultTransform != nil {
		return true
	}
	configs := slices.Collect(maps.Values(o.DefaultNamespaces))
	for _, by := range o.ByObject {
		if by.Transform != nil {
			return true
		}
		configs = slices.AppendSeq(configs, maps.Values(by.Namespaces))
	}
	return slices.ContainsFunc(configs, func(c cache.Config) bool { return c.Transform != nil })
}

// checkCache refuses cache settings under which the controllers would miss
// nodes, node Leases or pods.
func checkCache(o cache.Options) error {
	if o.DefaultLabelSelector != nil && !o.DefaultLabelSelector.Empty() ||
		o.DefaultFieldSelector != nil && !o.DefaultFieldSelector.Empty() {
		return fmt.Errorf("cache: a default label or field selector would hide nodes, Leases or pods from the node lifecycle controllers")
	}
	for _, obj := range []client.Object{&corev1.Node{}, &corev1.Pod{}, &coordinationv1.Lease{}} {
		found, by := find(o.ByObject, obj)
		if found == nil {
			continue
		}
		kind := reflect.TypeOf(obj).Elem().Name()
		if by.Label != nil && !by.Label.Empty() || by.Field != nil && !by.Field.Empty() {
			return fmt.Errorf("cache: a selector on %ss would hide some from the node lifecycle controllers", kind)
		}
		if _, ok := obj.(*corev1.Pod); ok && len(by.Namespaces) > 0 {
			if _, all := by.Namespaces[cache.AllNamespaces]; !all {
				return fmt.Errorf("cache: Pods are cached in %v only; the node lifecycle controllers need every node's pods",
					slices.Sorted(maps.Keys(by.Namespaces)))
			}
		}
	}
	return nil
}

// NewManager creates a manager for cfg with mgrOpts, its cache settings
// merged with what the controllers need (MergeCacheOptions), and adds the
// node lifecycle controllers to it with opts. It watches every request of
// the manager (on a copy of cfg): a span during which the apiserver cannot
// be reached is not taken for the silence of every node, and eviction
// deadlines are measured on the apiserver's clock, read from the Date of
// its answers.
//
// With leader election, the manager writes only while its Lease is its own
// by the local clock: until the renew deadline after the last renewal was
// sent. A process stopped past its lease duration (a SIGSTOP, a long pause
// of its VM) would otherwise write, when it wakes, beside the replica that
// took over, until its elector noticed the loss; every request that may
// change something fails instead, reads and the election's own requests
// excepted. A lock set in mgrOpts.LeaderElectionResourceLockInterface is
// kept, with the client it was made with, and watched the same way.
//
// The manager's client, built with mgrOpts.NewClient when set, has no
// client-side rate limit: the controllers write when nodes fail, and then
// must not wait. cfg's QPS and Burst still limit the cache's lists and
// watches.
//
// The manager carries health checks (Manager.HealthChecks), added to its
// own probe server as well: a leader whose Lease has lapsed, and caches not
// synced.
func NewManager(cfg *rest.Config, mgrOpts ctrl.Options, opts options.Options) (Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	if opts.DryRun && mgrOpts.LeaderElection {
		// A dry run beside a real replica must never take its lease.
		mgrOpts.LeaderElectionID = DryRunLeaseName(mgrOpts.LeaderElectionID)
	}
	mgrOpts.Cache = MergeCacheOptions(mgrOpts.Cache)
	if err := checkCache(mgrOpts.Cache); err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	clk := tickerOf(opts)
	s := newAPIServer(clk)
	cfg = rest.CopyConfig(cfg)
	s.Wrap(cfg)
	var events *electionEvents
	var gate *leadergate.Gate
	if mgrOpts.LeaderElection {
		var err error
		// The gate times the Lease on the real, monotonic clock, whatever
		// clock drives the controllers' deadlines.
		if events, gate, err = gateWrites(cfg, &mgrOpts, clock.RealClock{}); err != nil {
			return nil, fmt.Errorf("controllers: %w", err)
		}
		s.Takeover = gate
	}
	mgrOpts.NewClient = unthrottledClient(mgrOpts.NewClient)
	if mgrOpts.MapperProvider == nil {
		mgrOpts.MapperProvider = newMapper
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if events != nil {
		events.setManager(mgr)
	}
	if err := setup(mgr, opts, s); err != nil {
		return nil, err
	}
	if err := s.AddProbe(mgr, cfg, mgr.GetHTTPClient(), clk, opts.NodeMonitorPeriod); err != nil {
		return nil, err
	}
	return withHealthChecks(mgr, gate, clock.RealClock{})
}

// unthrottledClient returns a constructor of the manager's client that
// builds it, with newClient (client.New when nil), without a client-side
// rate limit. What the controllers write, they write when nodes fail: a dead
// zone's marks, taints and thousands of pod conditions, each one late a
// Service still routing to a dead pod. Their workers bound how much is in
// flight, and the apiserver's priority and fairness meters it; the cache's
// lists and watches, the pod watches, events and the leader election keep
// the config's limit (--kube-api-qps).
func unthrottledClient(newClient client.NewClientFunc) client.NewClientFunc {
	if newClient == nil {
		newClient = client.New
	}
	return func(cfg *rest.Config, o client.Options) (client.Client, error) {
		return newClient(unlimited(cfg), o)
	}
}

// DryRunLeaseName is the leader election lease a dry run (options.DryRun)
// takes in place of the one named: replicas in a dry run elect a leader
// among themselves, and never take the lease of replicas that write.
func DryRunLeaseName(name string) string { return name + "-dry-run" }

// SetupWithManager adds the node lifecycle controllers to mgr, a manager
// built elsewhere, whose cache must hold what MergeCacheOptions adds. With
// opts.DryRun, the caller gives mgr a lease of its own (DryRunLeaseName).
//
// It cannot watch the requests of a manager it did not build, so it learns
// what NewManager learns from them from a probe of the apiserver's /readyz
// instead, sent at start and every NodeMonitorPeriod: an outage counts
// against no node once the probe fails, at most one NodeMonitorPeriod after
// it began (the part before is counted as silence), and eviction deadlines
// are measured on the apiserver's clock from the probe's answers, on the
// local clock until the first. Nor can it hold the controllers' writes to
// the time the manager's leader election Lease is valid by the local
// clock, as NewManager does.
func SetupWithManager(mgr ctrl.Manager, opts options.Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	clk := tickerOf(opts)
	s := newAPIServer(clk)
	cfg := rest.CopyConfig(mgr.GetConfig())
	s.Wrap(cfg)
	probe, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("apiserver probe client: %w", err)
	}
	if err := setup(mgr, opts, s); err != nil {
		return err
	}
	return s.AddProbe(mgr, cfg, probe, clk, opts.NodeMonitorPeriod)
}

// tickerOf returns the clock opts drive deadlines by.
func tickerOf(opts options.Options) clock.WithTicker {
	if opts.Clock == nil {
		return clock.RealClock{}
	}
	return opts.Clock
}

// find returns the key of byObject whose type is obj's, and its value.
func find(byObject map[client.Object]cache.ByObject, obj client.Object) (client.Object, cache.ByObject) {
	for k, v := range byObject {
		if reflect.TypeOf(k) == reflect.TypeOf(obj) {
			return k, v
		}
	}
	return nil, cache.ByObject{}
}
