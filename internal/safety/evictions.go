package safety

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// Evictions is what the pods of a node with NoExecute taints call for at
// one time: which go now, which wait for their deadline, which a hold
// keeps, and whether the node must be read live first.
type Evictions struct {
	// Due are the pods to evict now, with what decided each.
	Due []Due
	// Despite are the pods of Due due by a NoExecute taint other than the
	// node lifecycle ones (such as node.kubernetes.io/out-of-service, set
	// to recover from a non-graceful shutdown), at the deadline that taint
	// alone sets: a hold stops the controller's own work, not an
	// administrator's, and they go even if the node is back.
	Despite []Due
	// Confirm is true when a pod of Due is due for the node's failure: the
	// node and its Lease are read live first, and if the node is back
	// (Back), only Despite go. The watch may lag behind a node that has
	// just come back.
	Confirm bool
	// Held is how many due pods a hold keeps, and Why why.
	Held int
	Why  string
	// Waiting are the pods whose deadline is still ahead, with it; Next is
	// the earliest of them, zero for none.
	Waiting []Due
	Next    time.Time
}

// Due is a pod and the deadline that decides it.
type Due struct {
	Pod      *corev1.Pod
	Decision eviction.Decision
}

// untimedKey names a NoExecute taint without timeAdded on a node.
type untimedKey struct{ node, taint string }

// Evictions decides what the node's pods call for at now, on the clock the
// taints' timeAdded is written by, with timeout for the pods that tolerate
// no node lifecycle taint. The pods are those not already on their way out.
func (m *Model) Evictions(node *corev1.Node, pods []corev1.Pod, timeout time.Duration, now time.Time) Evictions {
	m.turn.Lock()
	defer m.turn.Unlock()
	var e Evictions
	noExecute := m.noExecuteTaints(node, now)
	if len(noExecute) == 0 {
		return e
	}
	for i := range pods {
		pod := &pods[i]
		switch d := eviction.Deadline(pod, noExecute, timeout, now); {
		case !d.Evict:
		case d.At.After(now):
			e.Waiting = append(e.Waiting, Due{pod, d})
			e.Next = health.Earliest(e.Next, d.At)
		default:
			e.Due = append(e.Due, Due{pod, d})
		}
	}
	if len(e.Due) == 0 {
		return e
	}
	others := slices.DeleteFunc(slices.Clone(noExecute), func(t corev1.Taint) bool { return eviction.IsLifecycleTaint(t.Key) })
	for _, due := range e.Due {
		if d := eviction.Deadline(due.Pod, others, timeout, now); d.Evict && !d.At.After(now) {
			e.Despite = append(e.Despite, Due{due.Pod, d})
		}
	}
	if e.Why = m.evictionHold(node.Name); e.Why != "" {
		e.Held, e.Due = len(e.Due)-len(e.Despite), e.Despite
		return e
	}
	e.Confirm = slices.ContainsFunc(e.Due, func(d Due) bool { return eviction.IsLifecycleTaint(d.Decision.Taint) })
	return e
}

// evictionHold says why the node's pods may not be evicted for its failure
// now, "" when they may: during a partition freeze, while every zone is
// down, where the node's pool or zone holds them, and until every node has
// been counted, before which a dead zone cannot be told from a dead
// cluster.
func (m *Model) evictionHold(name string) string {
	if !m.guard.Seeded() {
		return "disruption guard not seeded yet"
	}
	_, why := m.guard.DestructiveAllowedFor(name)
	return why
}

// noExecuteTaints returns the node's NoExecute taints as evictions count
// them: a taint without timeAdded counts from when it was first seen, so
// that its deadline does not move at every look; the lifecycle taints of a
// node that reports Ready again are left out, since they are about to go,
// and pods whose deadline passed while an eviction was held must not go in
// that moment.
func (m *Model) noExecuteTaints(node *corev1.Node, now time.Time) []corev1.Taint {
	ready := health.ReadyCondition(node) != nil && health.ReadyCondition(node).Status == corev1.ConditionTrue
	var out []corev1.Taint
	seen := make(map[string]bool)
	for _, t := range node.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoExecute || ready && eviction.IsLifecycleTaint(t.Key) {
			continue
		}
		if t.TimeAdded == nil {
			key := untimedKey{node.Name, t.Key}
			at, ok := m.untimed[key]
			if !ok {
				at = now
				m.untimed[key] = at
			}
			t.TimeAdded = &metav1.Time{Time: at}
			seen[t.Key] = true
		}
		out = append(out, t)
	}
	for key := range m.untimed {
		if key.node == node.Name && !seen[key.taint] {
			delete(m.untimed, key)
		}
	}
	return out
}
