package shadow

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/taints"
)

// View holds what the dry-run controllers would have written, and shows
// Nodes and Pods with it in place of what another controller wrote.
type View struct {
	mu    sync.Mutex
	nodes map[string]*nodeView
	pods  map[types.UID]podView
	// seeds are what an earlier run of the dry run had done to nodes
	// still in a fault when it ended, until each node is first seen.
	seeds map[string]NodeState
}

// nodeView is a node's lifecycle state as the dry run would have left it.
type nodeView struct {
	uid types.UID
	// conds are the conditions a node lifecycle controller writes.
	conds []corev1.NodeCondition
	// basis is the Ready condition the kubelet last posted, as conds were
	// taken from it: a later post replaces them, as the kubelet's write
	// would replace a mark. A post is told by any field, not the heartbeat
	// alone: its times are whole seconds, and a kubelet that registers
	// posts Ready=False and then Ready=True, often within one second.
	basis corev1.NodeCondition
	// taints are the taints a node lifecycle controller owns.
	taints []corev1.Taint
}

// podView is what the dry run would have written to a pod.
type podView struct {
	node     string
	notReady time.Time // marked Ready=False
	deleted  time.Time // deleted
	due      time.Time // the eviction deadline still ahead, last seen
}

// NewView returns an empty View: every object is first seen as the cluster
// holds it.
func NewView() *View {
	return &View{nodes: map[string]*nodeView{}, pods: map[types.UID]podView{}, seeds: map[string]NodeState{}}
}

// Seed takes, from the episodes an earlier run kept, what it had done to
// the nodes still in a fault: such a node, when first seen, shows the
// NoExecute taint that run had added, or none, in place of the other
// controller's. Without it a restarted dry run would take the other
// controller's taints for its own, and go on to evict where it held.
func (v *View) Seed(episodes []Episode) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range episodes {
		e := &episodes[i]
		if e.Ended != nil {
			continue
		}
		seed := NodeState{NoExecute: e.Ours.NoExecute}
		if e.Ours.NoExecuteAdded != nil {
			seed.NoExecuteAdded = *e.Ours.NoExecuteAdded
		}
		v.seeds[e.Node] = seed
	}
}

// lifecycleConditions are the node conditions a node lifecycle controller
// writes (it marks them Unknown); the others are their writers' alone.
var lifecycleConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// ownedTaint reports whether a node lifecycle controller owns the taint: a
// NoSchedule taint it keeps in line with the node's conditions, or an
// unreachable or not-ready NoExecute taint.
func ownedTaint(t *corev1.Taint) bool {
	if taints.Owned(t) {
		return true
	}
	return t.Effect == corev1.TaintEffectNoExecute &&
		eviction.IsLifecycleTaint(t.Key)
}

// markedByController reports whether a Ready condition was written by a node
// lifecycle controller's mark rather than posted by the kubelet.
func markedByController(c *corev1.NodeCondition) bool {
	return c != nil && c.Status == corev1.ConditionUnknown &&
		(c.Reason == health.ReasonUnknown || c.Reason == health.ReasonNeverUpdated)
}

// ShowNode replaces, in node, what another controller wrote with what the
// dry run would have: the lifecycle conditions since the kubelet's last
// post, and the owned taints. A node seen for the first time, or made again
// under its name, is taken as it is. It sets new lists and never writes into
// the node's own: a look reads its Node from the cache uncopied, sharing them.
func (v *View) ShowNode(node *corev1.Node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	nv := v.nodes[node.Name]
	if nv == nil || nv.uid != node.UID {
		nv = v.firstSight(node)
	} else if ready := health.ReadyCondition(node); ready != nil && !markedByController(ready) &&
		!samePost(ready, &nv.basis) {
		nv.takeConditions(node)
	}
	node.Status.Conditions = withConditions(node.Status.Conditions, nv.conds)
	node.Spec.Taints = append(filterTaints(node.Spec.Taints, false), deepCopyTaints(nv.taints)...)
}

// firstSight takes a node seen for the first time, or made again under its
// name, as it is, but for the NoExecute taint an earlier run's seed gives
// it. The caller holds mu.
func (v *View) firstSight(node *corev1.Node) *nodeView {
	nv := &nodeView{uid: node.UID}
	nv.takeConditions(node)
	nv.taints = filterTaints(node.Spec.Taints, true)
	if seed, ok := v.seeds[node.Name]; ok {
		delete(v.seeds, node.Name)
		nv.taints = slices.DeleteFunc(nv.taints, func(t corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoExecute && ownedTaint(&t)
		})
		if seed.NoExecute != "" {
			nv.taints = append(nv.taints, corev1.Taint{Key: seed.NoExecute, Effect: corev1.TaintEffectNoExecute,
				TimeAdded: &metav1.Time{Time: seed.NoExecuteAdded}})
		}
	}
	v.nodes[node.Name] = nv
	return nv
}

// takeConditions takes the node's lifecycle conditions as the kubelet left
// them.
func (nv *nodeView) takeConditions(node *corev1.Node) {
	nv.conds = nv.conds[:0]
	for _, c := range node.Status.Conditions {
		if slices.Contains(lifecycleConditions, c.Type) {
			nv.conds = append(nv.conds, *c.DeepCopy())
		}
	}
	nv.basis = corev1.NodeCondition{}
	if ready := health.ReadyCondition(node); ready != nil {
		nv.basis = *ready.DeepCopy()
	}
}

// samePost reports whether two Ready conditions are one post of the
// kubelet's.
func samePost(a, b *corev1.NodeCondition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.LastHeartbeatTime.Equal(&b.LastHeartbeatTime) && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

// withConditions returns conds with its lifecycle conditions replaced by
// those of want, keeping the others in place.
func withConditions(conds, want []corev1.NodeCondition) []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, 0, len(conds)+len(want))
	for _, c := range conds {
		if !slices.Contains(lifecycleConditions, c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range want {
		out = append(out, *c.DeepCopy())
	}
	return out
}

// filterTaints returns the owned taints (owned true) or the others.
func filterTaints(in []corev1.Taint, owned bool) []corev1.Taint {
	var out []corev1.Taint
	for i := range in {
		if ownedTaint(&in[i]) == owned {
			out = append(out, *in[i].DeepCopy())
		}
	}
	return out
}

func deepCopyTaints(in []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// NodeWritten takes the node as the dry run would have written it, its
// status (status true) or its spec, and returns the node's lifecycle state
// before and after.
func (v *View) NodeWritten(node *corev1.Node, status bool) (before, after NodeState) {
	v.mu.Lock()
	defer v.mu.Unlock()
	nv := v.nodes[node.Name]
	if nv == nil || nv.uid != node.UID {
		// Written without being read through the view: take it whole.
		nv = v.firstSight(node)
	}
	before = nv.state()
	if status {
		basis := nv.basis
		nv.takeConditions(node)
		nv.basis = basis
	} else {
		nv.taints = filterTaints(node.Spec.Taints, true)
	}
	return before, nv.state()
}

// Node returns the node's lifecycle state as the dry run holds it, and
// whether it has seen the node.
func (v *View) Node(name string) (NodeState, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	nv := v.nodes[name]
	if nv == nil {
		return NodeState{}, false
	}
	return nv.state(), true
}

// ForgetNode drops a deleted node.
func (v *View) ForgetNode(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.nodes, name)
	delete(v.seeds, name)
	for uid, p := range v.pods {
		if p.node == name {
			delete(v.pods, uid)
		}
	}
}

// NodeState is a node's lifecycle state as one controller holds it.
type NodeState struct {
	// Marked is when the node's Ready condition was marked Unknown, zero
	// when it is not.
	Marked time.Time
	// NoExecute is the node lifecycle NoExecute taint, "" for none.
	NoExecute string
	// NoExecuteAdded is the taint's timeAdded.
	NoExecuteAdded time.Time
}

func (nv *nodeView) state() NodeState {
	var s NodeState
	for i := range nv.conds {
		if c := &nv.conds[i]; c.Type == corev1.NodeReady && markedByController(c) {
			s.Marked = c.LastTransitionTime.Time
		}
	}
	s.NoExecute, s.NoExecuteAdded = lifecycleNoExecute(nv.taints)
	return s
}

// lifecycleNoExecute returns the unreachable or not-ready NoExecute taint
// among taints, and its timeAdded.
func lifecycleNoExecute(ts []corev1.Taint) (string, time.Time) {
	for _, t := range ts {
		if t.Effect == corev1.TaintEffectNoExecute &&
			eviction.IsLifecycleTaint(t.Key) {
			var at time.Time
			if t.TimeAdded != nil {
				at = t.TimeAdded.Time
			}
			return t.Key, at
		}
	}
	return "", time.Time{}
}

// ShowPod shows a pod the dry run marked NotReady as NotReady, until the
// pod's Ready condition changes after the mark (the kubelet's write would
// have replaced the mark), and one it deleted as deleting.
func (v *View) ShowPod(pod *corev1.Pod) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pods[pod.UID]
	if !ok {
		return
	}
	if !p.notReady.IsZero() {
		for i := range pod.Status.Conditions {
			c := &pod.Status.Conditions[i]
			if c.Type != corev1.PodReady || c.Status != corev1.ConditionTrue {
				continue
			}
			if c.LastTransitionTime.After(p.notReady) {
				p.notReady = time.Time{}
				v.pods[pod.UID] = p
				continue
			}
			c.Status = corev1.ConditionFalse
			c.LastTransitionTime = metav1.NewTime(p.notReady)
		}
	}
	if !p.deleted.IsZero() && pod.DeletionTimestamp == nil {
		pod.DeletionTimestamp = &metav1.Time{Time: p.deleted}
	}
}

// PodMarkedNotReady records that the dry run marked the pod NotReady, and
// reports whether it had not before.
func (v *View) PodMarkedNotReady(pod *corev1.Pod, at time.Time) bool {
	return v.podWritten(pod, func(p *podView) *time.Time { return &p.notReady }, at)
}

// PodDeleted records that the dry run deleted the pod, and reports whether
// it had not before.
func (v *View) PodDeleted(pod *corev1.Pod, at time.Time) bool {
	return v.podWritten(pod, func(p *podView) *time.Time { return &p.deleted }, at)
}

// podWritten sets the time field picks of the pod's view to at, unless it
// is set, and reports whether it was not.
func (v *View) podWritten(pod *corev1.Pod, field func(*podView) *time.Time, at time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.pods[pod.UID]
	if f := field(&p); f.IsZero() {
		*f = at
	} else {
		return false
	}
	p.node = pod.Spec.NodeName
	v.pods[pod.UID] = p
	return true
}

// PodDue keeps the pod's eviction deadline, while it is still ahead.
func (v *View) PodDue(pod *corev1.Pod, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.pods[pod.UID]
	p.node, p.due = pod.Spec.NodeName, at
	v.pods[pod.UID] = p
}

// Due returns the pod's eviction deadline as the dry run last saw it still
// ahead, zero if it saw none.
func (v *View) Due(uid types.UID) time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.pods[uid].due
}

// ForgetPod drops a pod that is gone.
func (v *View) ForgetPod(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.pods, uid)
}
