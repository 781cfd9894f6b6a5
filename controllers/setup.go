package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/apiclock"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/index"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/sight"
)

// Options configures the controllers. The zero value is not valid; start
// from DefaultOptions.
type Options struct {
	// NodeMonitorGracePeriod is how long a node that has posted a Ready
	// condition may go without a heartbeat before it is marked Unknown.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod is the grace period of a node that has never
	// posted a Ready condition.
	NodeStartupGracePeriod time.Duration
	// NodeMonitorPeriod is the period of the safety resync that catches
	// deadlines a requeue missed.
	NodeMonitorPeriod time.Duration
	// PodEvictionTimeout is how long pods without a toleration for the
	// unreachable or not-ready NoExecute taint stay on a tainted node.
	PodEvictionTimeout time.Duration
	// NodeEvictionRate is the NoExecute tainting rate, in nodes per second,
	// of a zone that is not partially disrupted.
	NodeEvictionRate float64
	// SecondaryNodeEvictionRate is the rate of a partially disrupted zone
	// larger than LargeClusterSizeThreshold.
	SecondaryNodeEvictionRate float64
	// LargeClusterSizeThreshold is the zone size at or below which a
	// partially disrupted zone is not tainted at all.
	LargeClusterSizeThreshold int
	// UnhealthyZoneThreshold is the not-ready share (more than two nodes) at
	// which a zone is partially disrupted.
	UnhealthyZoneThreshold float64
	// PartitionFreezeThreshold is the share of nodes whose heartbeats, lost
	// within one grace period, freeze destructive work; 0 turns it off.
	PartitionFreezeThreshold float64
	// PartitionFreezeCooldown is how long the silent share must stay below
	// the threshold before a freeze ends.
	PartitionFreezeCooldown time.Duration
	// ReconcileTimeout bounds each reconcile, and so every request it sends
	// to the apiserver: a request stuck on a connection that stopped
	// forwarding (a half-open TCP connection, a proxy that hangs) fails
	// after it and is retried, instead of holding one of the few workers
	// for good. The cache's lists and watches are not bound by it. 0 means
	// DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// Clock drives every deadline; nil means the real clock.
	Clock clock.WithTicker
	// Sight, when set, watches the manager's requests to the apiserver
	// (its rest.Config wrapped with Sight.Wrap): a span during which the
	// apiserver could not be reached then counts against no node's
	// silence. NewManager sets it up; nil counts outages as silence.
	Sight *sight.Monitor
}

// DefaultReconcileTimeout is the ReconcileTimeout of Options that set none.
// A reconcile sends a few requests, or one per pod of a node, at most 16 at
// once: seconds, even behind the client's rate limit.
const DefaultReconcileTimeout = 30 * time.Second

// DefaultOptions returns kube-controller-manager's timings.
func DefaultOptions() Options {
	return Options{
		NodeMonitorGracePeriod:    50 * time.Second,
		NodeStartupGracePeriod:    time.Minute,
		NodeMonitorPeriod:         5 * time.Second,
		PodEvictionTimeout:        5 * time.Minute,
		NodeEvictionRate:          0.1,
		SecondaryNodeEvictionRate: 0.01,
		LargeClusterSizeThreshold: 50,
		UnhealthyZoneThreshold:    0.55,
		PartitionFreezeThreshold:  0.6,
		PartitionFreezeCooldown:   50 * time.Second,
		ReconcileTimeout:          DefaultReconcileTimeout,
	}
}

func (o Options) validate() error {
	if o.NodeMonitorGracePeriod <= 0 || o.NodeStartupGracePeriod <= 0 || o.NodeMonitorPeriod <= 0 || o.PodEvictionTimeout <= 0 {
		return errors.New("grace periods, the monitor period and the pod eviction timeout must be positive")
	}
	if o.NodeEvictionRate < 0 || o.SecondaryNodeEvictionRate < 0 || o.LargeClusterSizeThreshold < 0 {
		return errors.New("eviction rates and the large cluster size threshold must not be negative")
	}
	if o.ReconcileTimeout < 0 {
		return errors.New("the reconcile timeout must not be negative")
	}
	if o.UnhealthyZoneThreshold <= 0 || o.UnhealthyZoneThreshold > 1 || o.PartitionFreezeThreshold < 0 || o.PartitionFreezeThreshold > 1 {
		return errors.New("the unhealthy zone threshold must be in (0, 1] and the partition freeze threshold in [0, 1]")
	}
	return nil
}

// CacheOptions returns the cache settings the controllers need: Leases are
// watched in kube-node-lease only, and managed fields, which nothing here
// reads, are dropped from every cached object.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{corev1.NamespaceNodeLease: {}}},
		},
	}
}

// NewManager creates a manager for cfg with mgrOpts, its cache built with
// CacheOptions, and adds the node lifecycle controllers to it with opts. It
// watches the manager's requests (on a copy of cfg), so that a span during
// which the apiserver cannot be reached is not taken for the silence of
// every node.
func NewManager(cfg *rest.Config, mgrOpts ctrl.Options, opts Options) (ctrl.Manager, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	opts.Sight = sight.New(clk)
	// The apiserver's clock advances by this process's monotonic clock,
	// never by a clock a test or a step of the host's could move.
	apiClock := apiclock.New(clock.RealClock{})
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(opts.Sight.Wrap)
	cfg.Wrap(apiClock.Wrap)
	mgrOpts.Cache = CacheOptions()
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := setup(mgr, opts, apiClock); err != nil {
		return nil, err
	}
	// A hung apiserver fails no request of the controllers; the probe's,
	// given up after a monitor period, notices it.
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiserver URL: %w", err)
	}
	readyz := server.JoinPath("readyz").String()
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return opts.Sight.Probe(ctx, mgr.GetHTTPClient(), readyz, clk, opts.NodeMonitorPeriod)
	})); err != nil {
		return nil, fmt.Errorf("add apiserver probe: %w", err)
	}
	return mgr, nil
}

// SetupWithManager adds the node lifecycle controllers to mgr. The manager's
// cache must be built with CacheOptions.
//
// Unlike NewManager, which reads the apiserver's clock from its answers,
// it measures eviction deadlines on Options.Clock: a replica whose clock
// runs ahead of the one that added a taint evicts that much early.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return setup(mgr, opts, nil)
}

// setup adds the controllers to mgr. apiClock, when set, times what is
// written to the API and what is read from it: eviction deadlines, taints'
// timeAdded and the marks a new leader reads.
func setup(mgr ctrl.Manager, opts Options, apiClock *apiclock.Clock) error {
	if err := opts.validate(); err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if opts.ReconcileTimeout == 0 {
		opts.ReconcileTimeout = DefaultReconcileTimeout
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return EnsureLeaseNamespace(ctx, mgr.GetAPIReader(), mgr.GetClient())
	})); err != nil {
		return fmt.Errorf("add lease namespace check: %w", err)
	}
	if err := index.Register(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	defaults := opts.PoolDefaults()
	guard := disruption.NewGuard(disruption.Config{
		Rates:                  defaults.Disruption.Rates,
		UnhealthyZoneThreshold: defaults.Disruption.UnhealthyZoneThreshold,
		FreezeThreshold:        opts.PartitionFreezeThreshold,
		FreezeWindow:           opts.NodeMonitorGracePeriod,
		FreezeCooldown:         opts.PartitionFreezeCooldown,
	})
	policies, err := policiesServed(mgr)
	if err != nil {
		return err
	}
	var deadlines clock.PassiveClock = clk
	if apiClock != nil {
		deadlines = apiClock
	}
	r := &nodehealth.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clk,
		Recorder:  mgr.GetEventRecorder(nodehealth.ControllerName),
		Tracker:   health.NewTracker(),
		Grace:     defaults.Grace,
		Guard:     guard,

		ReconcileTimeout: opts.ReconcileTimeout,
	}
	if apiClock != nil {
		r.APIClock = apiClock
	}
	var source *nodehealthpolicy.Source
	if policies {
		source = &nodehealthpolicy.Source{Reader: mgr.GetClient(), Defaults: defaults, Guard: guard, Clock: clk,
			OnGuardChange: r.ApplyGuardChange}
		r.Policies = source
	}
	if opts.Sight != nil {
		r.Sight = opts.Sight
		log := mgr.GetLogger().WithName(nodehealth.ControllerName)
		opts.Sight.OnRegained(func(o sight.Outage) { r.ExcuseOutage(ctrl.LoggerInto(context.Background(), log), o) })
	}
	if err := r.SetupWithManager(mgr, opts.NodeMonitorPeriod, clk); err != nil {
		return fmt.Errorf("set up node health controller: %w", err)
	}
	pe := &podeviction.Reconciler{
		Client:             mgr.GetClient(),
		Clock:              deadlines,
		Recorder:           mgr.GetEventRecorder(podeviction.ControllerName),
		PodEvictionTimeout: opts.PodEvictionTimeout,
		Gate:               guardGate{guard},
		BlockedRetry:       opts.NodeMonitorPeriod,
		ReconcileTimeout:   opts.ReconcileTimeout,
	}
	if source != nil {
		pe.Policies = source
	}
	if err := pe.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up pod eviction controller: %w", err)
	}
	if source != nil {
		st := &nodehealthpolicy.Reconciler{
			Client:       mgr.GetClient(),
			Source:       source,
			Guard:        guard,
			Clock:        clk,
			Recorder:     mgr.GetEventRecorder(nodehealthpolicy.ControllerName),
			ResyncPeriod: opts.NodeMonitorPeriod,

			ReconcileTimeout: opts.ReconcileTimeout,
		}
		if err := st.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up NodeHealthPolicy status controller: %w", err)
		}
	}
	return nil
}

// PoolDefaults returns the settings of the nodes no NodeHealthPolicy
// selects, which are also what every policy's unset fields take.
func (o Options) PoolDefaults() policy.Settings {
	return policy.Settings{
		Grace:              health.Grace{Monitor: o.NodeMonitorGracePeriod, Startup: o.NodeStartupGracePeriod},
		PodEvictionTimeout: o.PodEvictionTimeout,
		Disruption: disruption.Pool{
			Rates: disruption.Rates{
				Normal:                    o.NodeEvictionRate,
				Secondary:                 o.SecondaryNodeEvictionRate,
				LargeClusterSizeThreshold: o.LargeClusterSizeThreshold,
			},
			UnhealthyZoneThreshold: o.UnhealthyZoneThreshold,
		},
	}
}

// policiesServed registers the NodeHealthPolicy types with the manager's
// scheme and reports whether the apiserver serves them. Without the CRD
// installed, every node follows the flags, as with kube-controller-manager;
// installing it later takes a restart.
func policiesServed(mgr ctrl.Manager) (bool, error) {
	// Registering writes to the scheme, which clients already running may
	// share (client-go's scheme.Scheme): only register what is missing.
	if !mgr.GetScheme().Recognizes(v1alpha1.GroupVersion.WithKind("NodeHealthPolicy")) {
		if err := v1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
			return false, fmt.Errorf("register NodeHealthPolicy types: %w", err)
		}
	}
	gk := v1alpha1.GroupVersion.WithKind("NodeHealthPolicy").GroupKind()
	_, err := mgr.GetRESTMapper().RESTMapping(gk, v1alpha1.GroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		mgr.GetLogger().Info("NodeHealthPolicy is not served (the CRD is not installed): every node follows the flags")
		return false, nil
	default:
		return false, fmt.Errorf("look up NodeHealthPolicy: %w", err)
	}
}

// guardGate lets the disruption guard hold pod evictions back.
type guardGate struct{ g *disruption.Guard }

// EvictionAllowed holds evictions back during a partition freeze, while
// every zone is down, and where the node's pool or zone holds them.
func (gg guardGate) EvictionAllowed(node *corev1.Node) (bool, string) {
	if !gg.g.Seeded() {
		// Until the node health controller has counted every node, the
		// guard cannot tell a dead zone from a dead cluster.
		return false, "disruption guard not seeded yet"
	}
	return gg.g.DestructiveAllowedFor(node.Name)
}

// EnsureLeaseNamespace creates kube-node-lease when it is missing. The
// apiserver normally creates it; a control plane that does not leaves the
// kubelets nowhere to write their Leases.
//
// It runs at start, when the apiserver may be restarting or shedding load,
// and an error it returns stops the manager. So it retries, with a jittered
// exponential backoff capped at 30s and until ctx ends, whatever may pass:
// server errors, 429s, timeouts and failed connections. It retries a 401 or
// 403 too, logging each as an error: credentials and RBAC can be fixed while
// the controller runs, and the controller needs the namespace only for the
// kubelets, so stopping would take node health down for a missing grant. A
// request the apiserver rejects for any other reason fails at once.
func EnsureLeaseNamespace(ctx context.Context, r client.Reader, w client.Writer) error {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", corev1.NamespaceNodeLease)
	ensure := func(ctx context.Context) error {
		ns := &corev1.Namespace{}
		err := r.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns)
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get namespace %s: %w", corev1.NamespaceNodeLease, err)
		}
		ns.Name = corev1.NamespaceNodeLease
		if err := w.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", corev1.NamespaceNodeLease, err)
		}
		log.Info("Created namespace")
		return nil
	}
	transient := func(err error) bool {
		if _, retryAfter := apierrors.SuggestsClientDelay(err); retryAfter {
			return true
		}
		if apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
			return true
		}
		// The request did not reach the apiserver, or its answer was cut.
		var urlErr *url.Error
		return errors.As(err, &urlErr) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err)
	}

	// Steps is enough for the delay to double from Duration up to Cap,
	// where it stays.
	backoff := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 16, Cap: 30 * time.Second}
	var last error
	err := backoff.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		err := ensure(ctx)
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			// Stopping: the loop returns the context's error.
			return false, nil
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			log.Error(err, "Not allowed to ensure the namespace, retrying: the controller needs get and create on namespaces")
		case transient(err):
			log.Info("Could not ensure the namespace, retrying", "error", err.Error())
		default:
			return false, err
		}
		last = err
		return false, nil
	})
	if err != nil && last != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("stopped ensuring namespace %s: %w; last attempt: %w", corev1.NamespaceNodeLease, err, last)
	}
	return err
}
