package nodehealth

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/readback"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/sight"
)

// LeaseNamespace is where kubelets keep their node Leases.
const LeaseNamespace = corev1.NamespaceNodeLease

// The permissions the reconciler uses, and no more.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kube-node-lease,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// APIClock tells the time by the apiserver's clock, within bounds.
type APIClock interface {
	// Now returns the latest time the apiserver's clock has surely reached.
	Now() time.Time
	// Stamp returns a time the apiserver's clock has surely not reached.
	Stamp() time.Time
}

// Deps are what the node health controller works with.
type Deps struct {
	// Client reads from the manager's cache and writes to the apiserver.
	// SetupWithManager has it read back its own Node writes until the
	// cache shows them (package readback). What it and APIReader send is
	// what a failure calls for at once (a dead zone's marks, the live reads
	// that confirm them, and thousands of pods whose every late write is a
	// Service still routing to a dead pod); the workers bound it, Workers
	// looks and podMarkWorkers nodes' podWorkers pods at a time, and the
	// setup gives both no client-side rate limit (controllers.NewManager).
	Client client.Client
	// APIReader reads from the apiserver directly; it confirms a silence
	// before a node is marked, so that a lagging watch never marks a live
	// node dead.
	APIReader client.Reader
	// Pods is where the pods of a node are read and heard of; nil means
	// every pod in the cache Client reads, indexed by node (index.Register).
	Pods podscope.Pods
	// Clock times heartbeats, deadlines and the nodes' wakes.
	Clock clock.WithTicker
	// Model is the safety model that decides every look: it owns the
	// heartbeats heard and the disruption state. The pod eviction
	// controller and the NodeHealthPolicy source and status share it.
	Model *safety.Model
	// APIClock, when set, tells the apiserver's time (internal/apiclock):
	// the NoExecute taints' timeAdded and the marks' lastTransitionTime are
	// written by it, and marks read by it, so that a replica whose clock
	// differs from the one that wrote them reads them alike. nil means
	// Clock.
	APIClock APIClock
	// Recorder emits events on Nodes.
	Recorder events.EventRecorder
	// FieldManager is the field manager this controller's writes carry:
	// another one that marks or taints nodes is told of (a warning event,
	// a metric, a log line). Empty turns that off, as for a dry run, which
	// runs beside another writer on purpose.
	FieldManager string
	// Grace holds the grace periods of nodes no policy selects; the
	// partition freeze measures its window in Grace.Monitor.
	Grace health.Grace
	// MaintenanceGrace is the maintenance grace of nodes no policy selects
	// (package maintenance); 0 turns the hold off.
	MaintenanceGrace time.Duration
	// Policies gives each node its pool's settings; nil means every node
	// follows Grace and the guard's own settings.
	Policies Policies
	// Takeover, when set, tells the span no leader watched before this
	// process took the leader election Lease from another
	// (leadergate.Gate); it is excused, as an outage is, before the first
	// look.
	Takeover interface {
		Unled() (from, to time.Time, ok bool)
	}
	// Sight, when set, tells whether the apiserver is out of the
	// controller's reach (sight.Monitor): no node is marked until it
	// answers again, even from an answer to a request sent before it went
	// away, and the time it could not be reached counts against no node.
	Sight Sight
	// ReconcileTimeout bounds each reconcile, and so every request it
	// sends: a request stuck on a dead connection fails and is retried
	// instead of holding a worker for good. 0 means none.
	ReconcileTimeout time.Duration
}

// Sight tells of the apiserver's outages (sight.Monitor).
type Sight interface {
	// Take reports whether the apiserver is out of reach, and takes the
	// outages that ended since the last Take.
	Take() (bool, []sight.Outage)
	// Regained receives a value after an outage ends.
	Regained() <-chan struct{}
}

// Reconciler judges one node per call and acts on the verdict.
type Reconciler struct {
	d Deps
	// exec carries the safety model's decisions out.
	exec *act.Executor
	// world is what a look reads and writes beyond the model (port.go).
	world world
	// told remembers what the looks told (tell.go).
	told told
	// seedMu makes the first reconciles wait while one seeds the guard.
	seedMu sync.Mutex
}

// world is the way of a look to the cluster and to the nodes' next looks:
// the apiserver through Deps' clients, and these.
type world struct {
	// wakes schedules each node's next look (wake.go).
	wakes *wakes
	// podMarks marks the pods of silent nodes NotReady on workers of its
	// own (podmarks.go).
	podMarks *podMarks
}

// told remembers what the looks told, so that each thing is told once.
type told struct {
	// maintenance remembers the nodes held for their maintenance, to tell
	// each hold's start and end once (maintenance.go).
	maintenance maintenanceHolds
	// foreign remembers the other writers already told of (foreign.go).
	foreign foreignSeen
	// zones publishes the zones' gauges in the order of their states.
	zones zoneGauges
	// started is when the controller was set up; nodes created before it
	// are not announced as registered.
	started time.Time
}

// New returns the node health reconciler. Its Client reads its own Node
// writes back until the cache shows them (package readback): the look a
// write queues must see the write, a mark then its taints each worked from
// what the last returned, not from the cache's older copy, which would
// repeat the live reads and be refused.
func New(d Deps) *Reconciler {
	d.Client = readback.New[corev1.Node](d.Client)
	var seen act.Sight
	if d.Sight != nil {
		seen = outages{d.Sight}
	}
	r := &Reconciler{d: d, exec: act.New(d.Model, podWorkers, seen), told: told{started: d.Clock.Now()}}
	r.world.wakes = newWakes(d.Clock, d.Model.Deadline)
	r.world.podMarks = newPodMarks(r)
	return r
}

// Executor returns the executor of the safety model's decisions: the pod
// eviction controller carries out the same model's decisions on which pods
// go.
func (r *Reconciler) Executor() *act.Executor { return r.exec }

// model returns the safety model that decides every look.
func (r *Reconciler) model() *safety.Model { return r.d.Model }

// Reconcile looks at a node: the safety model decides, from the node, its
// Lease and the time, what the look calls for, and the reconcile carries it
// out: a mark (after a live read confirms the silence), the node's taints
// and countdown record, its pods' readiness, the events and metrics, and the
// node's next look.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := r.d.Clock.Now()
	defer func() { updateNodeHealthDuration.Observe(r.d.Clock.Since(start).Seconds()) }()
	handed, _ := r.world.wakes.handedAt(req.Name)
	if err := r.seed(ctx, start); err != nil {
		return ctrl.Result{}, err
	}
	// The cache's own Node and Lease, uncopied: a look only reads them,
	// and writes its changes to copies (the simulator checks it).
	node := &corev1.Node{}
	if err := r.d.Client.Get(ctx, req.NamespacedName, node, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get node %q: %w", req.Name, err)
	}
	lease, err := getLease(ctx, r.d.Client, node.Name, client.UnsafeDisableDeepCopy)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.noticeForeignWriters(ctx, node)
	out, err := r.Executor().Look(ctx, port{r}, node, lease, r.settings(ctx, node))
	r.tell(ctx, out, err == nil, lookTimes{handed: handed, start: start})
	if apierrors.IsNotFound(err) {
		r.forget(ctx, req.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if out.Decision.MarkPods && out.Mark == nil {
		// On workers of their own (podmarks.go).
		r.world.podMarks.add(node.Name)
	}
	return ctrl.Result{}, nil
}

// outages is the executor's Sight: the Monitor's outages as spans, each
// counted in the metrics as it is taken.
type outages struct{ s Sight }

// Take implements act.Sight.
func (o outages) Take() (bool, []disruption.Span) {
	blind, ended := o.s.Take()
	spans := make([]disruption.Span, len(ended))
	for i, e := range ended {
		outagesExcused.Observe(e.Duration().Seconds())
		spans[i] = disruption.Span{From: e.From, To: e.To}
	}
	return blind, spans
}

// seed counts every node in the disruption guard, as its Ready condition
// stands, before the first node is judged: a new leader or a restarted
// controller must not judge zones, nor find every zone down and lift
// NoExecute taints, from the few nodes its workers happen to take first.
func (r *Reconciler) seed(ctx context.Context, now time.Time) error {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	if r.model().Seeded() {
		return nil
	}
	// Read only, as a look reads them: a copy of every Node, as large as
	// the Node cache, would be made just as the informers' first lists
	// have filled the heap.
	list := &corev1.NodeList{}
	if err := r.d.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list nodes to seed the disruption guard: %w", err)
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	// One reading of how far this clock runs from the apiserver's serves
	// the process's life: a mark then converts to the same local moment at
	// every look, as the freeze's count of silences needs, however the
	// apiserver's clock is later narrowed down.
	kept, err := r.kept(ctx)
	if err != nil {
		return err
	}
	if r.d.Takeover != nil {
		if from, to, ok := r.d.Takeover.Unled(); ok {
			// No node could be marked while no leader watched: the nodes
			// the old leader marked and those this one sees go quiet may
			// have gone silent together. Kept in the cluster too, for the
			// leader after this one.
			r.exec.Unwatched(from, to, now)
			ctrl.LoggerFrom(ctx).Info("Took over from a leader that last renewed its Lease before; the time between counts in no freeze window",
				"lastRenewed", from, "takenAt", to, "for", to.Sub(from).Round(time.Millisecond))
		}
	}
	settings := func(node *corev1.Node) policy.Settings { return r.settings(ctx, node) }
	r.guardChanged(ctx, r.model().Seed(nodes, settings, kept, now, r.apiNow(now)))
	// An unwatched span, or an outage this process saw before it led.
	r.exec.KeepFreeze(ctx, port{r})
	return nil
}

// apiNow returns the latest time the apiserver's clock has surely reached,
// given the local now.
func (r *Reconciler) apiNow(now time.Time) time.Time {
	if r.d.APIClock == nil {
		return now
	}
	return r.d.APIClock.Now()
}

// stamp returns the time to write into the API for something done now: one
// the apiserver's clock has surely not reached, so that a countdown read
// from it never ends early.
func (r *Reconciler) stamp(now time.Time) time.Time {
	if r.d.APIClock == nil {
		return now
	}
	return r.d.APIClock.Stamp()
}

// settings returns the settings of the node's pool.
func (r *Reconciler) settings(ctx context.Context, node *corev1.Node) policy.Settings {
	if r.d.Policies == nil {
		return policy.Settings{Grace: r.d.Grace, MaintenanceGrace: r.d.MaintenanceGrace}
	}
	return r.d.Policies.For(ctx, node)
}

// forget drops a node that no longer exists.
func (r *Reconciler) forget(ctx context.Context, name string) {
	r.world.wakes.clear(name)
	// The guard may count a node the tracker never saw: one seeded at
	// start and deleted before its first reconcile. It must not stay
	// counted as a ghost, Ready or not, in its zone.
	now := r.d.Clock.Now()
	c, gone := r.model().Remove(name, now)
	r.guardChanged(ctx, c)
	r.forgetMaintenance(name)
	r.told.foreign.forget(name)
	if !gone.Known {
		return
	}
	moveState(gone.State, health.StateUnjudged)
	ctrl.LoggerFrom(ctx).V(1).Info("Node is gone; forgetting it")
	r.eventRemoving(name, gone.UID)
}

// Policies is the controller's view of the NodeHealthPolicies in force
// (nodehealthpolicy.Source).
type Policies interface {
	// For returns the settings the node follows.
	For(ctx context.Context, node *corev1.Node) policy.Settings
	// Nodes subscribes the controller to policy changes: after each, the
	// returned source queues the nodes keep accepts (every node when keep
	// is nil), once For answers with the new policies.
	Nodes(keep func(*corev1.Node) bool) source.TypedSource[reconcile.Request]
}
