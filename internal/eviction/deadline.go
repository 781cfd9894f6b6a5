package eviction

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Cause says what decided a pod's deadline.
type Cause uint8

// The causes of a deadline.
const (
	// CauseNone: no NoExecute taint applies; the pod stays.
	CauseNone Cause = iota
	// CauseTolerated: every NoExecute taint is tolerated forever.
	CauseTolerated
	// CauseToleration: a toleration's tolerationSeconds ran out.
	CauseToleration
	// CauseDefaultTimeout: the pod has no toleration for the node
	// lifecycle taint, so the pod eviction timeout applies.
	CauseDefaultTimeout
	// CauseNotTolerated: the pod does not tolerate a NoExecute taint that
	// is not the controller's own; it goes at once.
	CauseNotTolerated
)

// String names the cause for logs and status output.
func (c Cause) String() string {
	switch c {
	case CauseTolerated:
		return "ToleratedForever"
	case CauseToleration:
		return "TolerationSeconds"
	case CauseDefaultTimeout:
		return "PodEvictionTimeout"
	case CauseNotTolerated:
		return "NotTolerated"
	default:
		return "NoNoExecuteTaint"
	}
}

// Decision is when a pod must be deleted, and why.
type Decision struct {
	// Evict is false when the pod may stay for good.
	Evict bool
	// At is the deadline; meaningful only when Evict is true.
	At time.Time
	// Cause is what decided At (or, without eviction, why not).
	Cause Cause
	// Taint is the key of the taint whose deadline comes first.
	Taint string
}

// Deadline computes when a pod on a node with the given taints must be
// deleted. For each NoExecute taint, the pod's matching tolerations decide:
// the smallest tolerationSeconds among them counts from the taint's
// timeAdded (a negative value counts as zero); matching tolerations that all
// lack seconds tolerate it forever. A taint no toleration matches gives
// podEvictionTimeout for the node lifecycle taints (unreachable, not-ready)
// and no time at all for any other. The pod's deadline is the earliest over
// all taints.
//
// A taint without timeAdded, which the controller never writes but a person
// might, counts from unknownAdded.
func Deadline(pod *corev1.Pod, taints []corev1.Taint, podEvictionTimeout time.Duration, unknownAdded time.Time) Decision {
	d := Decision{}
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		added := unknownAdded
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		at, cause := taintDeadline(pod.Spec.Tolerations, t, added, podEvictionTimeout)
		if cause == CauseTolerated {
			if d.Cause == CauseNone {
				d.Cause, d.Taint = CauseTolerated, t.Key
			}
			continue
		}
		if !d.Evict || at.Before(d.At) {
			d = Decision{Evict: true, At: at, Cause: cause, Taint: t.Key}
		}
	}
	return d
}

// taintDeadline is the deadline one NoExecute taint sets for a pod with the
// given tolerations; the cause is CauseTolerated when it sets none.
func taintDeadline(tolerations []corev1.Toleration, t *corev1.Taint, added time.Time, podEvictionTimeout time.Duration) (time.Time, Cause) {
	matched := false
	var minSeconds int64
	hasSeconds := false
	for i := range tolerations {
		tol := &tolerations[i]
		if !tol.ToleratesTaint(klog.Background(), t, true) {
			continue
		}
		matched = true
		if tol.TolerationSeconds == nil {
			continue
		}
		s := min(max(*tol.TolerationSeconds, 0), maxTolerationSeconds)
		if !hasSeconds || s < minSeconds {
			minSeconds, hasSeconds = s, true
		}
	}
	switch {
	case hasSeconds:
		return added.Add(time.Duration(minSeconds) * time.Second), CauseToleration
	case matched:
		return time.Time{}, CauseTolerated
	case IsLifecycleTaint(t.Key):
		return added.Add(podEvictionTimeout), CauseDefaultTimeout
	default:
		return added, CauseNotTolerated
	}
}

// maxTolerationSeconds keeps an absurd tolerationSeconds from overflowing a
// time.Duration; it is about 292 years.
const maxTolerationSeconds = int64(math.MaxInt64 / int64(time.Second))

// IsLifecycleTaint reports whether a taint key is one of the two the node
// lifecycle controller manages.
func IsLifecycleTaint(key string) bool {
	return key == corev1.TaintNodeUnreachable || key == corev1.TaintNodeNotReady
}
