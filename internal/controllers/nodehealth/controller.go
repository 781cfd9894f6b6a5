package nodehealth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/maintenance"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/sight"
)

// LeaseNamespace is where kubelets keep their node Leases.
const LeaseNamespace = corev1.NamespaceNodeLease

// errBlind stops a mark while the apiserver is out of the controller's
// reach.
var errBlind = errors.New("apiserver out of reach")

// blindRetryDelay is how soon a node whose mark waited for the apiserver is
// looked at again.
const blindRetryDelay = 100 * time.Millisecond

// conflictRetryDelay is how soon a node is looked at again after a write lost
// a race with another writer, most often the kubelet posting a heartbeat.
const conflictRetryDelay = 20 * time.Millisecond

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

// Reconciler judges one node per call and acts on the verdict.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the apiserver.
	// SetupWithManager has it read back its own Node writes until the
	// cache shows them (package readback).
	Client client.Client
	// APIReader reads from the apiserver directly; it confirms a silence
	// before a node is marked, so that a lagging watch never marks a live
	// node dead.
	APIReader client.Reader
	// Pods is where the pods of a node are read and heard of; nil means
	// every pod in the cache Client reads, indexed by node (index.Register).
	Pods podscope.Pods
	// Clock times heartbeats and deadlines.
	Clock clock.PassiveClock
	// APIClock, when set, tells the apiserver's time (internal/apiclock):
	// the NoExecute taints' timeAdded and the marks' lastTransitionTime are
	// written by it, and marks read by it, so that a replica whose clock
	// differs from the one that wrote them reads them alike. nil means
	// Clock.
	APIClock APIClock
	// Recorder emits events on Nodes.
	Recorder events.EventRecorder
	// Tracker remembers heartbeats between calls.
	Tracker *health.Tracker
	// Grace holds the grace periods of nodes no policy selects; the
	// partition freeze measures its window in Grace.Monitor.
	Grace health.Grace
	// MaintenanceGrace is the maintenance grace of nodes no policy selects
	// (package maintenance); 0 turns the hold off.
	MaintenanceGrace time.Duration
	// Policies gives each node its pool's settings; nil means every node
	// follows Grace and the guard's own settings.
	Policies policy.Source
	// Guard decides when NoExecute taints may be added and whether
	// destructive work is allowed at all.
	Guard *disruption.Guard
	// Sight, when set, tells whether the apiserver is out of the
	// controller's reach: no node is marked until it answers again, even
	// from an answer to a request sent before it went away.
	Sight interface{ Blind() (bool, time.Time) }
	// ReconcileTimeout bounds each reconcile, and so every request it
	// sends: a request stuck on a dead connection fails and is retried
	// instead of holding a worker for good. 0 means none.
	ReconcileTimeout time.Duration

	// wakes schedules each node's next look (wake.go).
	wakes *wakes
	// maintenance remembers the nodes held for their maintenance, to tell
	// each hold's start and end once (maintenance.go).
	maintenance maintenanceHolds
	// started is when the controller was set up; nodes created before it
	// are not announced as registered.
	started time.Time

	// seedMu makes the first reconciles wait while one seeds the guard.
	seedMu sync.Mutex
	// apiSkew is how far Clock runs ahead of the apiserver's clock, read
	// once, at seeding (under seedMu, which every reconcile takes first).
	apiSkew time.Duration
}

// Reconcile observes a node's heartbeats, judges it, marks it Unknown when its
// deadline has passed, brings its NoSchedule taints in line with its
// conditions, and sets the node's wake for its deadline.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	defer func() { updateNodeHealthDuration.Observe(r.Clock.Since(now).Seconds()) }()
	if err := r.seed(ctx, now); err != nil {
		return ctrl.Result{}, err
	}

	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get node %q: %w", req.Name, err)
	}
	lease, err := getLease(ctx, r.Client, node.Name)
	if err != nil {
		return ctrl.Result{}, err
	}

	obs := r.Tracker.Observe(node.Name, node.UID, health.PulseOf(node, lease), now)
	if obs.First && registeredSince(node, r.started) {
		r.eventRegistered(node)
	}
	settings := r.settings(ctx, node)
	v := health.Judge(node, obs.LastHeartbeat, settings.Grace, now)

	marked := false
	if v.Expired {
		node, v, marked, err = r.markUnreachable(ctx, node, v, settings.Grace, now)
		if err != nil {
			return r.settle(ctx, req.Name, err)
		}
	}
	if v.Expired && !r.Guard.Silent(node.Name) {
		// The node has just gone silent: see how many others are fading
		// with it before anything destructive is done to it.
		r.tick(ctx, now)
	}
	// Asked again: the live read before a mark may have heard the node.
	heard := r.Tracker.Heard(node.Name)
	m := maintenance.Of(node, settings.MaintenanceGrace, r.apiSkew)
	inMaintenance := m.Holds(now)
	r.applyChange(ctx, r.Guard.Update(node.Name, guardStatus(node, v, settings.Pool, heard, inMaintenance, now, r.apiSkew), now), now)
	if marked {
		// Other nodes' marks come before this node's taints and pods: its
		// deadline wake was queued ahead of other work, and the rest of
		// its look goes back behind it.
		moveState(r.Tracker.Judged(node.Name, v), v.State)
		r.wakes.clear(node.Name)
		r.wakes.now(node.Name)
		return ctrl.Result{}, nil
	}
	if err := r.reconcileTaints(ctx, node, now); err != nil {
		return r.settle(ctx, req.Name, err)
	}
	retry, err := r.reconcileNoExecute(ctx, node, settings.Pool, now)
	if err != nil {
		return r.settle(ctx, req.Name, err)
	}
	if wantedNoExecute(node) != "" {
		if ok, _ := r.Guard.PodMarkingAllowedFor(node.Name); ok {
			if err := r.markPodsNotReady(ctx, node, now); err != nil {
				return ctrl.Result{}, err
			}
		}
	}

	moveState(r.Tracker.Judged(node.Name, v), v.State)
	// Look again at the deadline, and when the guard may let a taint
	// through; an expired node needs nothing until a heartbeat arrives,
	// and a heartbeat is an event.
	if v.Expired {
		r.wakes.clear(node.Name)
	} else {
		r.wakes.atDeadline(node.Name, v.Deadline)
	}
	if retry > 0 {
		r.wakes.after(node.Name, now.Add(retry))
	}
	r.reconcileMaintenance(ctx, node, m, inMaintenance)
	return ctrl.Result{}, nil
}

// ExcuseOutage takes a span during which the controller could not reach the
// apiserver off every node's silence: the kubelets' heartbeats could not be
// written, or not be seen, so the span says nothing of the nodes. Each
// node's deadline moves on by as much of the span as it had been silent.
func (r *Reconciler) ExcuseOutage(ctx context.Context, o sight.Outage) {
	r.Tracker.Excuse(o.From, o.To)
	outagesExcused.Observe(o.Duration().Seconds())
	ctrl.LoggerFrom(ctx).Info("Reached the apiserver again; the time it could not be reached counts against no node",
		"unreachableSince", o.From, "for", o.Duration())
}

// seed counts every node in the disruption guard, as its Ready condition
// stands, before the first node is judged: a new leader or a restarted
// controller must not judge zones, nor find every zone down and lift
// NoExecute taints, from the few nodes its workers happen to take first.
func (r *Reconciler) seed(ctx context.Context, now time.Time) error {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	if r.Guard.Seeded() {
		return nil
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return fmt.Errorf("list nodes to seed the disruption guard: %w", err)
	}
	statuses := make(map[string]disruption.NodeStatus, len(nodes.Items))
	// One reading of how far this clock runs from the apiserver's serves
	// the process's life: a mark then converts to the same local moment at
	// every look, as the freeze's count of silences needs, however the
	// apiserver's clock is later narrowed down.
	r.apiSkew = now.Sub(r.apiNow(now))
	for i := range nodes.Items {
		node := &nodes.Items[i]
		// Nothing is heard yet: a node already marked counts as silent
		// since its mark, unless it is in maintenance.
		s := r.settings(ctx, node)
		inMaintenance := maintenance.Of(node, s.MaintenanceGrace, r.apiSkew).Holds(now)
		statuses[node.Name] = guardStatus(node, health.Verdict{}, s.Pool, false, inMaintenance, now, r.apiSkew)
	}
	r.applyChange(ctx, r.Guard.Seed(statuses, now), now)
	return nil
}

// apiNow returns the latest time the apiserver's clock has surely reached,
// given the local now.
func (r *Reconciler) apiNow(now time.Time) time.Time {
	if r.APIClock == nil {
		return now
	}
	return r.APIClock.Now()
}

// stamp returns the time to write into the API for something done now: one
// the apiserver's clock has surely not reached, so that a countdown read
// from it never ends early.
func (r *Reconciler) stamp(now time.Time) time.Time {
	if r.APIClock == nil {
		return now
	}
	return r.APIClock.Stamp()
}

// settings returns the settings of the node's pool.
func (r *Reconciler) settings(ctx context.Context, node *corev1.Node) policy.Settings {
	if r.Policies == nil {
		return policy.Settings{Grace: r.Grace, MaintenanceGrace: r.MaintenanceGrace}
	}
	return r.Policies.For(ctx, node)
}

// tick lets the guard re-evaluate what changes with time: the nodes going
// quiet within the freeze window, which is the flags' grace period, and
// whether every node is known well enough to end the wait after start.
func (r *Reconciler) tick(ctx context.Context, now time.Time) {
	q := r.Tracker.Quiet(now, r.Grace.Monitor)
	r.applyChange(ctx, r.Guard.Tick(q.Fading, q.Decided, now), now)
}

// settle turns a failed read or write into a result: a node deleted under
// the reconciler is forgotten, a lost race is looked at again shortly,
// anything else is returned for the work queue to retry with backoff.
func (r *Reconciler) settle(ctx context.Context, name string, err error) (ctrl.Result, error) {
	switch {
	case apierrors.IsNotFound(err):
		r.forget(ctx, name)
		return ctrl.Result{}, nil
	case errors.Is(err, errBlind):
		ctrl.LoggerFrom(ctx).V(1).Info("Not marking while the apiserver is out of reach", "error", err.Error())
		r.wakes.after(name, r.Clock.Now().Add(blindRetryDelay))
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		ctrl.LoggerFrom(ctx).V(2).Info("Node changed while being written; looking again", "error", err.Error())
		r.wakes.after(name, r.Clock.Now().Add(conflictRetryDelay))
		return ctrl.Result{}, nil
	default:
		return ctrl.Result{}, err
	}
}

// forget drops a node that no longer exists.
func (r *Reconciler) forget(ctx context.Context, name string) {
	r.wakes.clear(name)
	// The guard may count a node the tracker never saw: one seeded at
	// start and deleted before its first reconcile. It must not stay
	// counted as a ghost, Ready or not, in its zone.
	now := r.Clock.Now()
	r.applyChange(ctx, r.Guard.Remove(name, now), now)
	r.forgetMaintenance(name)
	uid, state, ok := r.Tracker.Forget(name)
	if !ok {
		return
	}
	moveState(state, health.StateUnjudged)
	ctrl.LoggerFrom(ctx).V(1).Info("Node is gone; forgetting it")
	r.eventRemoving(name, uid)
}
