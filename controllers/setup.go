package controllers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/apiclock"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/index"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/owners"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/sight"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// apiserver is what the controllers learn from the apiserver's answers
// beyond their content: when it could not be reached (an outage, which
// counts against no node's silence) and its clock (which eviction deadlines
// are measured on).
type apiserver struct {
	Outages *sight.Monitor
	Clock   *apiclock.Clock
	// Takeover, when set, tells the span from the last renewal of the
	// leader before this process to when this process took the leader
	// election Lease, if it took it from one (leadergate.Gate): time no
	// leader watched, which a new leader's freeze window reaches over as
	// over an outage.
	Takeover interface {
		Unled() (from, to time.Time, ok bool)
	}
}

// newAPIServer returns an apiserver whose outages are timed on clk. The
// apiserver's clock advances by this process's monotonic clock, never by a
// clock a test or a step of the host's could move.
func newAPIServer(clk clock.PassiveClock) apiserver {
	return apiserver{Outages: sight.New(clk), Clock: apiclock.New(clock.RealClock{})}
}

// Wrap has s watch every request sent with cfg.
func (s apiserver) Wrap(cfg *rest.Config) {
	cfg.Wrap(s.Outages.Wrap)
	cfg.Wrap(s.Clock.Wrap)
}

// AddProbe adds to mgr a probe of the /readyz of the apiserver cfg names,
// sent with c (a client whose transport s wraps) at once and then every
// period. A hung apiserver fails no request of the controllers; the
// probe's, given up after a period, notices it. Its answers also keep the
// apiserver's clock known when nothing else is sent.
func (s apiserver) AddProbe(mgr ctrl.Manager, cfg *rest.Config, c *http.Client, clk clock.WithTicker, period time.Duration) error {
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return fmt.Errorf("apiserver URL: %w", err)
	}
	readyz := server.JoinPath("readyz").String()
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return s.Outages.Probe(ctx, c, readyz, clk, period)
	})); err != nil {
		return fmt.Errorf("add apiserver probe: %w", err)
	}
	return nil
}

// setup adds the node lifecycle controllers to mgr with opts, which must be
// valid. s, when its parts are set, tells the controllers of outages and of
// the apiserver's clock.
func setup(mgr ctrl.Manager, opts options.Options, s apiserver) error {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	timeout := opts.ReconcileTimeoutOrDefault()
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if opts.DryRun {
			return nil
		}
		return ensureLeaseNamespace(ctx, mgr.GetAPIReader(), mgr.GetClient())
	})); err != nil {
		return fmt.Errorf("add lease namespace check: %w", err)
	}
	defaults := policy.Defaults(opts)
	model := safety.New(health.NewTracker(), disruption.NewGuard(disruption.Config{
		Rates:                  defaults.Disruption.Rates,
		UnhealthyZoneThreshold: defaults.Disruption.UnhealthyZoneThreshold,
		FreezeThreshold:        opts.PartitionFreezeThreshold,
		FreezeWindow:           opts.NodeMonitorGracePeriod,
		FreezeCooldown:         opts.FreezeCooldown(),
	}), defaults.Grace.Monitor)
	policies, err := policiesServed(mgr)
	if err != nil {
		return err
	}
	upstream, err := newUpstreamEvents(mgr)
	if err != nil {
		return err
	}
	w, err := newWriters(mgr, opts, upstream, model, clk)
	if err != nil {
		return err
	}
	pods, err := podsFor(mgr, opts, w.client, clk)
	if err != nil {
		return err
	}
	var deadlines clock.PassiveClock = clk
	if s.Clock != nil {
		deadlines = s.Clock
	}
	var source *nodehealthpolicy.Source
	if policies {
		source = &nodehealthpolicy.Source{Reader: mgr.GetClient(), Informers: mgr.GetCache(), Defaults: defaults,
			Pools: model, Clock: clk}
	}
	d := nodehealth.Deps{
		Client:           w.client,
		APIReader:        w.apiReader,
		Pods:             pods,
		Clock:            clk,
		Recorder:         w.recorder(nodehealth.EventSource),
		Model:            model,
		Grace:            defaults.Grace,
		MaintenanceGrace: defaults.MaintenanceGrace,
		ReconcileTimeout: timeout,
	}
	if s.Clock != nil {
		d.APIClock = s.Clock
	}
	if !opts.DryRun {
		d.FieldManager = owners.ManagerOf(mgr.GetConfig().UserAgent)
	}
	if source != nil {
		d.Policies = source
	}
	if s.Takeover != nil {
		d.Takeover = s.Takeover
	}
	if s.Outages != nil {
		d.Sight = s.Outages
	}
	r := nodehealth.New(d)
	if err := r.Register(mgr, opts.NodeMonitorPeriod); err != nil {
		return fmt.Errorf("set up node health controller: %w", err)
	}
	pe := &podeviction.Reconciler{
		Client:             w.client,
		Pods:               pods,
		Clock:              deadlines,
		Recorder:           w.recorder(podeviction.EventSource),
		Nudges:             w.nudges(),
		Due:                w.due(),
		PodEvictionTimeout: opts.PodEvictionTimeout,
		LocalClock:         clk,
		APIReader:          w.apiReader,
		Executor:           r.Executor(),
		Grace:              defaults.Grace,
		BlockedRetry:       opts.NodeMonitorPeriod,
		ReconcileTimeout:   timeout,
	}
	if source != nil {
		pe.Policies = source
	}
	if err := pe.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up pod eviction controller: %w", err)
	}
	if source != nil {
		st := &nodehealthpolicy.Reconciler{
			Client:       w.client,
			Source:       source,
			Model:        model,
			Clock:        clk,
			Recorder:     w.policyRecorder(mgr, nodehealthpolicy.ControllerName),
			ResyncPeriod: opts.NodeMonitorPeriod,

			ReconcileTimeout: timeout,
		}
		if err := st.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up NodeHealthPolicy status controller: %w", err)
		}
		// Started after every controller subscribed to it.
		if err := mgr.Add(source); err != nil {
			return fmt.Errorf("add NodeHealthPolicy source: %w", err)
		}
	}
	return nil
}

// podsFor returns where the controllers read pods: a watch of the pods of
// the nodes in trouble only, or, in a dry run (which must see every
// eviction the other controller makes) and with opts.PodWatchNodes 0, the
// manager's cache of every pod, read through c.
func podsFor(mgr ctrl.Manager, opts options.Options, c client.Reader, clk clock.WithTicker) (podscope.Pods, error) {
	if opts.DryRun || opts.PodWatchNodes == 0 {
		if err := index.Register(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return nil, err
		}
		return podscope.Cluster{Reader: c, Cache: mgr.GetCache()}, nil
	}
	// A node expected keeps its watch for two resyncs: each resync expects
	// the nodes going quiet again, until they are marked.
	scoped, err := podscope.NewScoped(mgr.GetConfig(), mgr.GetCache(), opts.PodWatchNodes, 2*opts.NodeMonitorPeriod, clk)
	if err != nil {
		return nil, err
	}
	scoped.Log = mgr.GetLogger().WithName("pod-watches")
	scoped.Leading(mgr.Elected())
	if err := mgr.Add(scoped); err != nil {
		return nil, fmt.Errorf("add pod watches: %w", err)
	}
	return scoped, nil
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
