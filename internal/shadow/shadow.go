package shadow

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// Holds tells why the dry run holds a node's NoExecute taint or its
// evictions back; the disruption guard is one.
type Holds interface {
	// Hold returns why the node's NoExecute taint is held back, "" if it
	// is not.
	Hold(node string) string
	// DestructiveAllowedFor reports whether the node's pods may be evicted
	// now, and if not, why.
	DestructiveAllowedFor(node string) (bool, string)
}

// Shadow is one dry run: its View, its Record, and where it tells what it
// would have done.
type Shadow struct {
	View   *View
	Record *Record
	// Clock times what the dry run would have done.
	Clock clock.PassiveClock
	// Holds, when set, tells why the dry run held back what the other
	// controller did.
	Holds Holds
	// Recorder emits the dry run's events, on an object of its own.
	Recorder events.EventRecorder

	nudges chan event.TypedGenericEvent[*corev1.Node]
	// restored, when a Store keeps the record, is closed once the Store
	// has restored what an earlier run kept: reads of Nodes and Pods wait
	// for it.
	restored    chan struct{}
	restoreOnce sync.Once
}

// New returns a dry run keeping rec, its events emitted by recorder.
func New(rec *Record, clk clock.PassiveClock, recorder events.EventRecorder) *Shadow {
	return &Shadow{View: NewView(), Record: rec, Clock: clk, Recorder: recorder,
		nudges: make(chan event.TypedGenericEvent[*corev1.Node], 1024)}
}

// Store returns the Store that keeps the dry run's Record in the ConfigMap
// key, reading it with reader and writing it with writer every period it
// changed. Until the Store has restored what an earlier run kept, reads of
// Nodes and Pods through the dry run's clients wait: a controller must not
// judge a node before the View knows what the dry run had done to it.
func (s *Shadow) Store(reader client.Reader, writer client.Client, key types.NamespacedName,
	clk clock.WithTicker, period time.Duration) *Store {
	s.restored = make(chan struct{})
	return &Store{Reader: reader, Writer: writer, Key: key, Shadow: s, Clock: clk, Period: period}
}

// Restore takes the episodes an earlier run kept into the Record and the
// View, and lets reads waiting for them go on.
func (s *Shadow) Restore(episodes []Episode) {
	s.Record.Restore(episodes)
	s.View.Seed(episodes)
	if s.restored != nil {
		s.restoreOnce.Do(func() { close(s.restored) })
	}
}

// awaitRestore waits until the Store restored the record, if one keeps it.
func (s *Shadow) awaitRestore(ctx context.Context) error {
	if s.restored == nil {
		return nil
	}
	select {
	case <-s.restored:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the dry-run record: %w", ctx.Err())
	}
}

// Nudges are the nodes whose lifecycle taints the dry run changed: no
// object the controllers watch changes with them, so the pod eviction
// controller is told on this channel instead.
func (s *Shadow) Nudges() <-chan event.TypedGenericEvent[*corev1.Node] { return s.nudges }

// nudge tells the pod eviction controller to look at the node again; a
// full channel drops it, the controller's resync covers it.
func (s *Shadow) nudge(node *corev1.Node) {
	select {
	case s.nudges <- event.TypedGenericEvent[*corev1.Node]{Object: node.DeepCopy()}:
	default:
	}
}

// holdOf returns why the dry run holds the node's NoExecute taint back.
func (s *Shadow) holdOf(node string) string {
	if s.Holds == nil {
		return ""
	}
	return s.Holds.Hold(node)
}

// evictionHoldOf returns why the dry run holds the node's evictions back.
func (s *Shadow) evictionHoldOf(node string) string {
	if s.Holds == nil {
		return ""
	}
	if ok, why := s.Holds.DestructiveAllowedFor(node); !ok {
		return why
	}
	return ""
}

// nodeWritten tells what a write of the node's status or spec would have
// done, and keeps it in the View and the Record.
func (s *Shadow) nodeWritten(ctx context.Context, node *corev1.Node, status bool) {
	log := ctrl.LoggerFrom(ctx).WithValues("Node", node.Name)
	now := s.Clock.Now()
	before, after := s.View.NodeWritten(node, status)
	if before.Marked.IsZero() && !after.Marked.IsZero() {
		// Timed now on the local clock, not by the stamp written, which
		// runs ahead of the apiserver's clock to keep countdowns safe.
		s.Record.Marked(node.Name, true, now)
		actions.WithLabelValues(ActionMark).Inc()
		log.Info("Dry run: would mark node Unknown")
	}
	defer func() {
		if after.Marked.IsZero() && after.NoExecute == "" && readyTrue(node) {
			s.Record.Recovered(node.Name, now)
		}
	}()
	if status {
		return
	}
	switch {
	case after.NoExecute != "" && before.NoExecute != after.NoExecute:
		s.Record.Tainted(node.Name, true, after.NoExecute, now, "")
		actions.WithLabelValues(ActionTaint).Inc()
		log.Info("Dry run: would taint node NoExecute", "taint", after.NoExecute)
		s.event(node, ReasonWouldTaint, ActionTaint, "Would taint node %s NoExecute with %s", node.Name, after.NoExecute)
	case after.NoExecute == "" && before.NoExecute != "":
		why := s.holdOf(node.Name)
		actions.WithLabelValues(ActionUntaint).Inc()
		log.Info("Dry run: would remove NoExecute taint", "taint", before.NoExecute, "reason", why)
		s.event(node, ReasonWouldUntaint, ActionUntaint, "Would remove NoExecute taint %s from node %s%s",
			before.NoExecute, node.Name, because(why))
	default:
		actions.WithLabelValues(ActionNoSchedule).Inc()
		log.V(1).Info("Dry run: would update NoSchedule taints")
	}
	s.nudge(node)
}

// readyTrue reports whether the node's Ready condition is True.
func readyTrue(node *corev1.Node) bool {
	ready := health.ReadyCondition(node)
	return ready != nil && ready.Status == corev1.ConditionTrue
}

// podMarked keeps a NotReady mark of the pod in the View.
func (s *Shadow) podMarked(ctx context.Context, pod *corev1.Pod) {
	if s.View.PodMarkedNotReady(pod, s.Clock.Now()) {
		actions.WithLabelValues(ActionMarkPod).Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Dry run: would mark pod NotReady", "Pod", pod.Namespace+"/"+pod.Name)
	}
}

// podDeleted keeps an eviction of the pod in the View and the Record.
func (s *Shadow) podDeleted(ctx context.Context, pod *corev1.Pod) {
	now := s.Clock.Now()
	if !s.View.PodDeleted(pod, now) {
		return
	}
	name := pod.Namespace + "/" + pod.Name
	s.Record.Evicted(Eviction{Node: pod.Spec.NodeName, Pod: name, Ours: true, At: now, Decided: now})
	actions.WithLabelValues(ActionEvict).Inc()
	ctrl.LoggerFrom(ctx).Info("Dry run: would evict pod", "Pod", name, "Node", pod.Spec.NodeName)
}

// EvictionDue keeps the deadline of a pod the dry run would evict later, to
// tell when, should the other controller evict it first.
func (s *Shadow) EvictionDue(pod *corev1.Pod, at time.Time) { s.View.PodDue(pod, at) }

// event emits one of the dry run's events, on its own object.
func (s *Shadow) event(node *corev1.Node, reason, action, note string, args ...any) {
	if s.Recorder == nil {
		return
	}
	s.Recorder.Eventf(node, nil, corev1.EventTypeNormal, reason, action, note, args...)
}

func because(why string) string {
	if why == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", why)
}

// Reasons of the dry run's own events.
const (
	ReasonWouldTaint   = "DryRunWouldTaint"
	ReasonWouldUntaint = "DryRunWouldUntaint"
)

// The actions a dry run counts, by the metric's action label.
const (
	ActionMark       = "mark"
	ActionTaint      = "taint"
	ActionUntaint    = "untaint"
	ActionNoSchedule = "noschedule"
	ActionMarkPod    = "mark-pod-not-ready"
	ActionEvict      = "evict"
)
