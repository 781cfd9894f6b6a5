package safety

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// podEpisode is one silence of a node, as the controller found it: the
// pods already marked NotReady in it.
type podEpisode struct {
	// since is the Ready condition's lastTransitionTime when the silence
	// began; a new transition is a new silence.
	since  time.Time
	marked map[types.UID]struct{}
}

// PodsToMark returns the pods of a silent node to mark NotReady: those that
// say Ready and were not marked in this silence. A pod is marked once per
// silence: what sets it Ready again afterwards is not fought.
func (m *Model) PodsToMark(node *corev1.Node, pods []corev1.Pod) []*corev1.Pod {
	since := silenceOf(node)
	m.turn.Lock()
	defer m.turn.Unlock()
	e := m.pods[node.Name]
	if e != nil && !e.since.Equal(since) {
		e = nil
	}
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !health.PodReady(p) {
			continue
		}
		if e != nil {
			if _, done := e.marked[p.UID]; done {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// PodMarked records that a pod of the node was marked NotReady in its
// current silence.
func (m *Model) PodMarked(node *corev1.Node, uid types.UID) {
	since := silenceOf(node)
	m.turn.Lock()
	defer m.turn.Unlock()
	e := m.pods[node.Name]
	if e == nil || !e.since.Equal(since) {
		e = &podEpisode{since: since, marked: make(map[types.UID]struct{})}
		m.pods[node.Name] = e
	}
	e.marked[uid] = struct{}{}
}

// endEpisode forgets the pods marked in a node's silence once it needs no
// NoExecute taint.
func (m *Model) endEpisode(name string) {
	delete(m.pods, name)
}

// silenceOf returns when the node's current Ready status began.
func silenceOf(node *corev1.Node) time.Time {
	if ready := health.ReadyCondition(node); ready != nil {
		return ready.LastTransitionTime.Time
	}
	return time.Time{}
}
