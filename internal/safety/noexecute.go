package safety

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// WantedNoExecute returns the node lifecycle NoExecute taint a node's Ready
// condition calls for, or "" for none: unreachable for Unknown, not-ready
// for False. A status no API version defines evicts nothing: the node may
// well be heartbeating, and the NoSchedule taint already keeps new pods off.
func WantedNoExecute(node *corev1.Node) string {
	ready := health.ReadyCondition(node)
	switch {
	case ready == nil:
		return ""
	case ready.Status == corev1.ConditionFalse:
		return corev1.TaintNodeNotReady
	case ready.Status == corev1.ConditionUnknown:
		return corev1.TaintNodeUnreachable
	default:
		return ""
	}
}

// HasNoExecute reports whether the node carries the given NoExecute taint.
func HasNoExecute(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// lifecycleNoExecute returns the node's first lifecycle NoExecute taint, or
// nil.
func lifecycleNoExecute(node *corev1.Node) *corev1.Taint {
	for i := range node.Spec.Taints {
		if t := &node.Spec.Taints[i]; isLifecycleNoExecute(t) {
			return t
		}
	}
	return nil
}

func isLifecycleNoExecute(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute && eviction.IsLifecycleTaint(t.Key)
}

// TaintWrite is what a look wants written to a Node's NoExecute taints and
// countdown record, in one patch.
type TaintWrite struct {
	// Taints is the node's whole list of taints after the write.
	Taints []corev1.Taint
	// Countdown is the record to keep (AnnotationCountdown), or nil to
	// remove it.
	Countdown *Countdown
	// Added is the lifecycle NoExecute taint added, "" when the write only
	// removes or swaps one.
	Added string
	// Removed is true when the write takes the lifecycle NoExecute taint
	// off.
	Removed bool
	// Took is true when the write spends a token of its zone's queue: if
	// it fails, Model.TaintFailed gives the token back.
	Took bool
	// Grace is the maintenance grace record to keep
	// (AnnotationMaintenanceGrace), or nil to remove it.
	Grace *MaintenanceGrace
}

// Apply returns a copy of node with the write applied.
func (w *TaintWrite) Apply(node *corev1.Node) *corev1.Node {
	out := node.DeepCopy()
	out.Spec.Taints = w.Taints
	setAnnotation(out, AnnotationCountdown, w.Countdown != nil, func() string { return encode(w.Countdown) })
	setAnnotation(out, AnnotationMaintenanceGrace, w.Grace != nil, func() string { return encode(w.Grace) })
	return out
}

// setAnnotation sets the annotation to value() when keep is true, and
// removes it otherwise.
func setAnnotation(node *corev1.Node, key string, keep bool, value func() string) {
	if !keep {
		delete(node.Annotations, key)
		return
	}
	if node.Annotations == nil {
		node.Annotations = make(map[string]string, 1)
	}
	node.Annotations[key] = value()
}

// setNoExecute returns the write that leaves the node with exactly the given
// lifecycle NoExecute taint ("" for none), other taints kept, or nil when
// nothing changes. stamp is the time to write for something done now, by
// the apiserver's clock.
//
// The countdown runs across every change of one episode: a taint that
// replaces the other lifecycle taint (a node going from not ready to
// unreachable, or back) keeps its timeAdded; a taint taken off for a hold
// leaves its time served in the countdown record; a taint added back after
// one is set back by that time. Only a node that needs no taint any more,
// one Ready again, ends the episode and drops the record.
func setNoExecute(node *corev1.Node, key string, stamp time.Time) *TaintWrite {
	out := make([]corev1.Taint, 0, len(node.Spec.Taints)+1)
	changed, present := false, false
	var old *metav1.Time
	for _, t := range node.Spec.Taints {
		switch {
		case isLifecycleNoExecute(&t) && t.Key == key && !present:
			present = true
			out = append(out, t)
		case isLifecycleNoExecute(&t):
			if t.TimeAdded != nil && (old == nil || t.TimeAdded.Before(old)) {
				old = t.TimeAdded
			}
			changed = true
		default:
			out = append(out, t)
		}
	}
	record, recorded := CountdownOf(node)
	w := &TaintWrite{Grace: graceOrNil(node)}
	switch {
	case key == "":
		// Ready again, or no Ready condition: the episode is over.
		w.Removed = changed
		changed = changed || recorded
	case present:
		// Kept, and any other lifecycle taint dropped.
		w.Countdown = recordedOrNil(record, recorded)
	case old != nil:
		// Swapped: one failure, one countdown.
		added := *old
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
		w.Countdown = recordedOrNil(record, recorded)
		changed = true
	default:
		added := metav1.NewTime(stamp)
		if recorded {
			// Resumed: the time served before the hold counts.
			added = metav1.NewTime(stamp.Add(-record.Served()))
			if added.Before(&metav1.Time{Time: record.Started}) {
				added = metav1.NewTime(record.Started)
			}
			record.Resumed = stamp
		}
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
		w.Countdown = recordedOrNil(record, recorded)
		w.Added = key
		changed = true
	}
	if !changed {
		return nil
	}
	w.Taints = out
	return w
}

// pauseNoExecute returns the write that takes the node's lifecycle NoExecute
// taint off for a hold, recording the time its countdown had served, or nil
// when it carries none.
func pauseNoExecute(node *corev1.Node, stamp time.Time) *TaintWrite {
	t := lifecycleNoExecute(node)
	if t == nil {
		return nil
	}
	w := setNoExecute(node, "", stamp)
	record, recorded := CountdownOf(node)
	if t.TimeAdded == nil {
		// An untimed taint gives no countdown to keep; the pod eviction
		// controller timed it from when it first saw it.
		w.Countdown = recordedOrNil(record, recorded)
		return w
	}
	if !recorded {
		record.Started = t.TimeAdded.Time
	}
	served := stamp.Sub(t.TimeAdded.Time)
	if served < 0 {
		served = 0
	}
	record.ServedSeconds = int64(served / time.Second)
	w.Countdown = &record
	return w
}

func recordedOrNil(c Countdown, ok bool) *Countdown {
	if !ok {
		return nil
	}
	return &c
}

// graceOrNil returns the maintenance grace record the node carries, or nil.
func graceOrNil(node *corev1.Node) *MaintenanceGrace {
	if g, ok := MaintenanceGraceOf(node); ok {
		return &g
	}
	return nil
}
