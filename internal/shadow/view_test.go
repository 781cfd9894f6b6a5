package shadow

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// t0 is the fixed time the tests of the package start from.
var t0 = time.Date(2025, time.March, 14, 9, 26, 53, 0, time.UTC)

// maintenance is a node condition no node lifecycle controller writes.
const maintenance corev1.NodeConditionType = "MaintenanceInProgress"

// kubeletNode returns a node as the kubelet left it: Ready with the given
// heartbeat, no pressure, not in maintenance, with the given taints.
func kubeletNode(name string, uid types.UID, heartbeat time.Time, ts ...corev1.Taint) *corev1.Node {
	hb := metav1.NewTime(heartbeat)
	since := metav1.NewTime(t0.Add(-time.Hour))
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: hb, LastTransitionTime: since}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour))},
		Spec:       corev1.NodeSpec{Taints: ts},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			cond(maintenance, corev1.ConditionFalse, "NoMaintenance"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		}},
	}
}

// markedAt returns a copy of node with its lifecycle conditions marked
// Unknown at the given time, as a node lifecycle controller marks them.
func markedAt(t *testing.T, node *corev1.Node, at time.Time) *corev1.Node {
	t.Helper()
	out := node.DeepCopy()
	conds, changed := health.MarkUnknown(out.Status.Conditions, out.CreationTimestamp, metav1.NewTime(at))
	if !changed {
		t.Fatalf("MarkUnknown of node %s changed nothing", node.Name)
	}
	out.Status.Conditions = conds
	return out
}

// withCondition returns a copy of node with the condition of type ct set to
// status s.
func withCondition(node *corev1.Node, ct corev1.NodeConditionType, s corev1.ConditionStatus) *corev1.Node {
	out := node.DeepCopy()
	for i := range out.Status.Conditions {
		if out.Status.Conditions[i].Type == ct {
			out.Status.Conditions[i].Status = s
		}
	}
	return out
}

// shown returns what the view shows of a copy of node.
func shown(v *View, node *corev1.Node) *corev1.Node {
	out := node.DeepCopy()
	v.ShowNode(out)
	return out
}

// conditionOf returns the node's condition of type ct, failing without one.
func conditionOf(t *testing.T, node *corev1.Node, ct corev1.NodeConditionType) corev1.NodeCondition {
	t.Helper()
	for _, c := range node.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	t.Fatalf("node %s has no %s condition; conditions: %+v", node.Name, ct, node.Status.Conditions)
	return corev1.NodeCondition{}
}

// taintKeys returns the node's taints as "key:Effect", sorted.
func taintKeys(node *corev1.Node) []string {
	out := make([]string, 0, len(node.Spec.Taints))
	for _, t := range node.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

func noExecute(key string, added time.Time) corev1.Taint {
	at := metav1.NewTime(added)
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &at}
}

func noSchedule(key string) corev1.Taint {
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule}
}

// A node seen for the first time is shown as the cluster holds it.
func TestShowNodeFirstSightTakesNodeAsIs(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
	}{
		{name: "ready", node: kubeletNode("n1", "uid-1", t0)},
		{name: "already marked by another controller", node: markedAt(t, kubeletNode("n1", "uid-1", t0), t0.Add(time.Minute))},
		{name: "tainted by another controller", node: kubeletNode("n1", "uid-1", t0,
			noExecute(corev1.TaintNodeUnreachable, t0), noSchedule(corev1.TaintNodeUnreachable), noSchedule("example.com/x"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView()
			got := shown(v, tt.node)
			for _, want := range tt.node.Status.Conditions {
				if c := conditionOf(t, got, want.Type); c.Status != want.Status || c.Reason != want.Reason ||
					!c.LastHeartbeatTime.Equal(&want.LastHeartbeatTime) {
					t.Errorf("condition %s = %s/%s heartbeat %v, want %s/%s heartbeat %v", want.Type,
						c.Status, c.Reason, c.LastHeartbeatTime, want.Status, want.Reason, want.LastHeartbeatTime)
				}
			}
			if len(got.Status.Conditions) != len(tt.node.Status.Conditions) {
				t.Errorf("shown %d conditions, want %d: %+v", len(got.Status.Conditions), len(tt.node.Status.Conditions), got.Status.Conditions)
			}
			if g, w := taintKeys(got), taintKeys(tt.node); !slices.Equal(g, w) {
				t.Errorf("taints = %v, want %v", g, w)
			}
		})
	}
}

// The Ready condition a read shows, after the view took the node and
// perhaps marked it, depends on who wrote the real node's Ready last.
func TestShowNodeReadyCondition(t *testing.T) {
	hb := t0
	ourMark := t0.Add(40 * time.Second)
	theirMark := t0.Add(45 * time.Second)
	inCluster := kubeletNode("n1", "uid-1", hb)

	tests := []struct {
		name string
		// ourMark is whether the dry run marked the node Unknown.
		ourMark bool
		// then is the real node the later read finds.
		then *corev1.Node
		// want is the Ready condition shown; wantMarked the view's mark.
		wantStatus     corev1.ConditionStatus
		wantReason     string
		wantHeartbeat  time.Time
		wantTransition time.Time
		wantMarked     time.Time
	}{
		{
			name: "kubelet has not posted since, no mark", then: inCluster,
			wantStatus: corev1.ConditionTrue, wantReason: "KubeletReady", wantHeartbeat: hb, wantTransition: t0.Add(-time.Hour),
		},
		{
			name: "kubelet has not posted since our mark", ourMark: true, then: inCluster,
			wantStatus: corev1.ConditionUnknown, wantReason: health.ReasonUnknown, wantHeartbeat: hb, wantTransition: ourMark,
			wantMarked: ourMark,
		},
		{
			name: "another controller marked it too", ourMark: true, then: markedAt(t, inCluster, theirMark),
			wantStatus: corev1.ConditionUnknown, wantReason: health.ReasonUnknown, wantHeartbeat: hb, wantTransition: ourMark,
			wantMarked: ourMark,
		},
		{
			name: "another controller marked it, ours did not", then: markedAt(t, inCluster, theirMark),
			wantStatus: corev1.ConditionTrue, wantReason: "KubeletReady", wantHeartbeat: hb, wantTransition: t0.Add(-time.Hour),
		},
		{
			name: "kubelet posted Ready after our mark", ourMark: true, then: kubeletNode("n1", "uid-1", hb.Add(2*time.Minute)),
			wantStatus: corev1.ConditionTrue, wantReason: "KubeletReady", wantHeartbeat: hb.Add(2 * time.Minute), wantTransition: t0.Add(-time.Hour),
		},
		{
			name: "kubelet posted NotReady after our mark", ourMark: true,
			then:       withCondition(kubeletNode("n1", "uid-1", hb.Add(2*time.Minute)), corev1.NodeReady, corev1.ConditionFalse),
			wantStatus: corev1.ConditionFalse, wantReason: "KubeletReady", wantHeartbeat: hb.Add(2 * time.Minute), wantTransition: t0.Add(-time.Hour),
		},
		{
			name: "node recreated under the name", ourMark: true, then: kubeletNode("n1", "uid-2", hb),
			wantStatus: corev1.ConditionTrue, wantReason: "KubeletReady", wantHeartbeat: hb, wantTransition: t0.Add(-time.Hour),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView()
			read := shown(v, inCluster)
			if tt.ourMark {
				before, after := v.NodeWritten(markedAt(t, read, ourMark), true)
				if !before.Marked.IsZero() || !after.Marked.Equal(ourMark) {
					t.Fatalf("NodeWritten: Marked before %v after %v, want zero then %v", before.Marked, after.Marked, ourMark)
				}
			}

			got := shown(v, tt.then)
			ready := conditionOf(t, got, corev1.NodeReady)
			if ready.Status != tt.wantStatus || ready.Reason != tt.wantReason {
				t.Errorf("Ready = %s (%s), want %s (%s)", ready.Status, ready.Reason, tt.wantStatus, tt.wantReason)
			}
			if !ready.LastHeartbeatTime.Time.Equal(tt.wantHeartbeat) || !ready.LastTransitionTime.Time.Equal(tt.wantTransition) {
				t.Errorf("Ready heartbeat %v transition %v, want %v and %v", ready.LastHeartbeatTime.Time,
					ready.LastTransitionTime.Time, tt.wantHeartbeat, tt.wantTransition)
			}
			// The other lifecycle conditions go with Ready.
			if mp := conditionOf(t, got, corev1.NodeMemoryPressure); (mp.Status == corev1.ConditionUnknown) != (tt.wantStatus == corev1.ConditionUnknown) {
				t.Errorf("MemoryPressure = %s while Ready = %s: the lifecycle conditions were not shown together", mp.Status, ready.Status)
			}
			state, ok := v.Node("n1")
			if !ok {
				t.Fatal("Node(n1): the view does not hold the node")
			}
			if !state.Marked.Equal(tt.wantMarked) {
				t.Errorf("Node(n1).Marked = %v, want %v", state.Marked, tt.wantMarked)
			}
		})
	}
}

// A kubelet that registers posts Ready=False and then Ready=True, often
// within one second: the second post has the first's heartbeat (whole
// seconds), and is told from it by its other fields, whichever differs.
func TestShowNodeTakesTwoPostsInOneSecond(t *testing.T) {
	hb := t0
	ready := kubeletNode("n1", "uid-1", hb)
	notReady := withCondition(ready, corev1.NodeReady, corev1.ConditionFalse)
	notReady.Status.Conditions[2].Reason = "KubeletNotReady"
	notReady.Status.Conditions[2].LastTransitionTime = metav1.NewTime(hb)
	tests := []struct {
		name        string
		first, then *corev1.Node
		wantStatus  corev1.ConditionStatus
		wantMessage string
	}{
		{name: "NotReady then Ready", first: notReady, then: ready, wantStatus: corev1.ConditionTrue},
		{name: "Ready then NotReady", first: ready, then: notReady, wantStatus: corev1.ConditionFalse},
		{name: "a new message alone", first: notReady, then: func() *corev1.Node {
			n := notReady.DeepCopy()
			n.Status.Conditions[2].Message = "container runtime network not ready"
			return n
		}(), wantStatus: corev1.ConditionFalse, wantMessage: "container runtime network not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView()
			shown(v, tt.first)
			got := conditionOf(t, shown(v, tt.then), corev1.NodeReady)
			if got.Status != tt.wantStatus || got.Message != tt.wantMessage {
				t.Errorf("Ready = %s (%q), want %s (%q): the second post in one second was missed",
					got.Status, got.Message, tt.wantStatus, tt.wantMessage)
			}
		})
	}
}

// Conditions no node lifecycle controller writes are always the inCluster
// node's, whatever the view holds.
func TestShowNodeOtherConditionsComeFromRealNode(t *testing.T) {
	v := NewView()
	inCluster := kubeletNode("n1", "uid-1", t0)
	read := shown(v, inCluster)
	// What the dry run writes carries the maintenance condition as it read it.
	v.NodeWritten(markedAt(t, read, t0.Add(time.Minute)), true)

	for _, then := range []*corev1.Node{
		withCondition(inCluster, maintenance, corev1.ConditionTrue),
		withCondition(markedAt(t, inCluster, t0.Add(2*time.Minute)), maintenance, corev1.ConditionTrue),
	} {
		got := shown(v, then)
		if c := conditionOf(t, got, maintenance); c.Status != corev1.ConditionTrue {
			t.Errorf("%s = %s, want True as the real node has it", maintenance, c.Status)
		}
		if c := conditionOf(t, got, corev1.NodeReady); c.Status != corev1.ConditionUnknown {
			t.Errorf("Ready = %s, want the view's Unknown", c.Status)
		}
		// The four lifecycle conditions of the mark, and maintenance once.
		if n := len(got.Status.Conditions); n != 5 {
			t.Errorf("shown %d conditions, want 5: %+v", n, got.Status.Conditions)
		}
	}
	withoutMaintenance := kubeletNode("n1", "uid-1", t0)
	withoutMaintenance.Status.Conditions = slices.DeleteFunc(withoutMaintenance.Status.Conditions,
		func(c corev1.NodeCondition) bool { return c.Type == maintenance })
	got := shown(v, withoutMaintenance)
	for _, c := range got.Status.Conditions {
		if c.Type == maintenance {
			t.Errorf("shown %s the real node no longer has", maintenance)
		}
	}
}

// A node without a Ready condition that another controller marked as never
// updated keeps showing without one.
func TestShowNodeHidesOthersNeverUpdatedMark(t *testing.T) {
	v := NewView()
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1", CreationTimestamp: metav1.NewTime(t0)}}
	shown(v, fresh)

	got := shown(v, markedAt(t, fresh, t0.Add(time.Minute)))
	if len(got.Status.Conditions) != 0 {
		t.Errorf("shown conditions %+v, want none: another controller's never-updated mark is hidden", got.Status.Conditions)
	}
	if s, _ := v.Node("n1"); !s.Marked.IsZero() {
		t.Errorf("Node(n1).Marked = %v, want zero", s.Marked)
	}
}

// The view hides the lifecycle taints another controller writes, and
// shows the others as the cluster holds them.
func TestShowNodeTaints(t *testing.T) {
	tests := []struct {
		name  string
		taint corev1.Taint
		owned bool
	}{
		{name: "unreachable NoExecute", taint: noExecute(corev1.TaintNodeUnreachable, t0), owned: true},
		{name: "unreachable NoSchedule", taint: noSchedule(corev1.TaintNodeUnreachable), owned: true},
		{name: "not-ready NoExecute", taint: noExecute(corev1.TaintNodeNotReady, t0), owned: true},
		{name: "not-ready NoSchedule", taint: noSchedule(corev1.TaintNodeNotReady), owned: true},
		{name: "memory-pressure NoSchedule", taint: noSchedule(corev1.TaintNodeMemoryPressure), owned: true},
		{name: "another key NoSchedule", taint: noSchedule("example.com/x")},
		{name: "another key NoExecute", taint: noExecute("example.com/x", t0)},
		{name: "out-of-service NoExecute", taint: noExecute(corev1.TaintNodeOutOfService, t0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView()
			inCluster := kubeletNode("n1", "uid-1", t0)
			shown(v, inCluster)

			then := inCluster.DeepCopy()
			then.Spec.Taints = []corev1.Taint{tt.taint, noSchedule("example.com/kept")}
			got := shown(v, then)
			want := []string{"example.com/kept:NoSchedule"}
			if !tt.owned {
				want = append(want, tt.taint.Key+":"+string(tt.taint.Effect))
				slices.Sort(want)
			}
			if g := taintKeys(got); !slices.Equal(g, want) {
				t.Errorf("taints = %v, want %v", g, want)
			}
			if s, _ := v.Node("n1"); s.NoExecute != "" {
				t.Errorf("Node(n1).NoExecute = %q, want none: another controller's taint is not the view's", s.NoExecute)
			}
		})
	}
}

// A spec the dry run writes sets the node's lifecycle taints in the view,
// whatever the real node carries.
func TestNodeWrittenTaints(t *testing.T) {
	v := NewView()
	inCluster := kubeletNode("n1", "uid-1", t0, noSchedule("example.com/x"))
	read := shown(v, inCluster)

	added := t0.Add(5 * time.Minute)
	tainted := read.DeepCopy()
	tainted.Spec.Taints = append(tainted.Spec.Taints, noExecute(corev1.TaintNodeUnreachable, added), noSchedule(corev1.TaintNodeUnreachable))
	before, after := v.NodeWritten(tainted, false)
	if before != (NodeState{}) {
		t.Errorf("NodeWritten before = %+v, want no mark and no taint", before)
	}
	if after.NoExecute != corev1.TaintNodeUnreachable || !after.NoExecuteAdded.Equal(added) || !after.Marked.IsZero() {
		t.Errorf("NodeWritten after = %+v, want NoExecute %s added %v", after, corev1.TaintNodeUnreachable, added)
	}
	if s, ok := v.Node("n1"); !ok || s != after {
		t.Errorf("Node(n1) = %+v, %v; want %+v, true", s, ok, after)
	}

	want := []string{"example.com/x:NoSchedule", corev1.TaintNodeUnreachable + ":NoExecute", corev1.TaintNodeUnreachable + ":NoSchedule"}
	// The real node has none of the lifecycle taints, or another
	// controller's: the view's are shown either way.
	for _, then := range []*corev1.Node{
		inCluster,
		kubeletNode("n1", "uid-1", t0, noSchedule("example.com/x"), noExecute(corev1.TaintNodeNotReady, t0)),
	} {
		got := shown(v, then)
		if g := taintKeys(got); !slices.Equal(g, want) {
			t.Errorf("taints = %v, want %v", g, want)
		}
		for _, tn := range got.Spec.Taints {
			if tn.Key == corev1.TaintNodeUnreachable && tn.Effect == corev1.TaintEffectNoExecute &&
				(tn.TimeAdded == nil || !tn.TimeAdded.Time.Equal(added)) {
				t.Errorf("unreachable NoExecute timeAdded = %v, want %v", tn.TimeAdded, added)
			}
		}
	}

	// A taint the administrator added later shows beside the view's.
	got := shown(v, kubeletNode("n1", "uid-1", t0, noSchedule("example.com/x"), noSchedule("example.com/y")))
	if g := taintKeys(got); !slices.Contains(g, "example.com/y:NoSchedule") || !slices.Contains(g, corev1.TaintNodeUnreachable+":NoExecute") {
		t.Errorf("taints = %v, want example.com/y beside the view's unreachable taints", g)
	}

	// Removing the taint removes it from the view, though another
	// controller's is on the real node.
	untainted := shown(v, inCluster)
	untainted.Spec.Taints = slices.DeleteFunc(untainted.Spec.Taints, func(tn corev1.Taint) bool { return ownedTaint(&tn) })
	before, after = v.NodeWritten(untainted, false)
	if before.NoExecute != corev1.TaintNodeUnreachable || after.NoExecute != "" || !after.NoExecuteAdded.IsZero() {
		t.Errorf("NodeWritten untaint: before %+v after %+v, want unreachable then none", before, after)
	}
	got = shown(v, kubeletNode("n1", "uid-1", t0, noExecute(corev1.TaintNodeUnreachable, t0)))
	if g := taintKeys(got); len(g) != 0 {
		t.Errorf("taints = %v, want none", g)
	}
}

// A status the dry run writes leaves the view's taints alone, and a spec
// leaves its conditions alone.
func TestNodeWrittenStatusAndSpecApart(t *testing.T) {
	v := NewView()
	read := shown(v, kubeletNode("n1", "uid-1", t0))
	marked := markedAt(t, read, t0.Add(time.Minute))
	marked.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeUnreachable, t0)}
	_, after := v.NodeWritten(marked, true)
	if after.NoExecute != "" || !after.Marked.Equal(t0.Add(time.Minute)) {
		t.Errorf("status write: state %+v, want marked at %v without a taint", after, t0.Add(time.Minute))
	}

	tainted := kubeletNode("n1", "uid-1", t0, noExecute(corev1.TaintNodeUnreachable, t0.Add(2*time.Minute)))
	before, after := v.NodeWritten(tainted, false)
	if !before.Marked.Equal(t0.Add(time.Minute)) || !after.Marked.Equal(t0.Add(time.Minute)) {
		t.Errorf("spec write: Marked before %v after %v, want the status write's %v kept", before.Marked, after.Marked, t0.Add(time.Minute))
	}
	if after.NoExecute != corev1.TaintNodeUnreachable {
		t.Errorf("spec write: NoExecute = %q, want %s", after.NoExecute, corev1.TaintNodeUnreachable)
	}
}

// A node written without being read through the view is taken whole.
func TestNodeWrittenUnseenNode(t *testing.T) {
	v := NewView()
	node := markedAt(t, kubeletNode("n1", "uid-1", t0, noExecute(corev1.TaintNodeNotReady, t0)), t0.Add(time.Minute))
	before, after := v.NodeWritten(node, true)
	want := NodeState{Marked: t0.Add(time.Minute), NoExecute: corev1.TaintNodeNotReady, NoExecuteAdded: t0}
	if before != want || after != want {
		t.Errorf("NodeWritten = %+v, %+v; want both %+v", before, after, want)
	}
}

// A node made again under its name is taken fresh: nothing of the old
// node's view shows on it.
func TestShowNodeRecreatedNode(t *testing.T) {
	v := NewView()
	old := shown(v, kubeletNode("n1", "uid-1", t0))
	v.NodeWritten(markedAt(t, old, t0.Add(time.Minute)), true)
	tainted := kubeletNode("n1", "uid-1", t0, noExecute(corev1.TaintNodeUnreachable, t0.Add(time.Minute)))
	v.NodeWritten(tainted, false)

	// Same heartbeat: only the UID tells it is another node.
	again := kubeletNode("n1", "uid-2", t0, noSchedule(corev1.TaintNodeNotReady))
	got := shown(v, again)
	if c := conditionOf(t, got, corev1.NodeReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s, want True as the new node has it", c.Status)
	}
	if g, w := taintKeys(got), []string{corev1.TaintNodeNotReady + ":NoSchedule"}; !slices.Equal(g, w) {
		t.Errorf("taints = %v, want the new node's %v", g, w)
	}
	if s, _ := v.Node("n1"); s != (NodeState{}) {
		t.Errorf("Node(n1) = %+v, want the new node's: no mark, no taint", s)
	}
}

// What a read shows is a copy: changing it changes nothing in the view.
func TestShowNodeReturnsCopies(t *testing.T) {
	v := NewView()
	read := shown(v, kubeletNode("n1", "uid-1", t0))
	written := markedAt(t, read, t0.Add(time.Minute))
	written.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeUnreachable, t0.Add(time.Minute))}
	v.NodeWritten(written, true)
	v.NodeWritten(written, false)
	// The caller's object goes on being changed after the write.
	written.Status.Conditions[0].Status = corev1.ConditionTrue
	written.Spec.Taints[0].Key = "example.com/changed"

	got := shown(v, kubeletNode("n1", "uid-1", t0))
	for i := range got.Status.Conditions {
		got.Status.Conditions[i].Status = corev1.ConditionFalse
	}
	for i := range got.Spec.Taints {
		got.Spec.Taints[i].Key = "example.com/changed"
		got.Spec.Taints[i].TimeAdded.Time = t0
	}

	again := shown(v, kubeletNode("n1", "uid-1", t0))
	if c := conditionOf(t, again, corev1.NodeReady); c.Status != corev1.ConditionUnknown {
		t.Errorf("Ready = %s, want Unknown: changing an object shown or written changed the view", c.Status)
	}
	if g, w := taintKeys(again), []string{corev1.TaintNodeUnreachable + ":NoExecute"}; !slices.Equal(g, w) {
		t.Errorf("taints = %v, want %v", g, w)
	}
	if s, _ := v.Node("n1"); !s.NoExecuteAdded.Equal(t0.Add(time.Minute)) {
		t.Errorf("NoExecuteAdded = %v, want %v", s.NoExecuteAdded, t0.Add(time.Minute))
	}
}

// ForgetNode drops the node, and the pods on it.
func TestForgetNode(t *testing.T) {
	v := NewView()
	read := shown(v, kubeletNode("n1", "uid-1", t0))
	v.NodeWritten(markedAt(t, read, t0.Add(time.Minute)), true)
	onNode, elsewhere := testPod("p1", "uid-p1", "n1"), testPod("p2", "uid-p2", "n2")
	v.PodDeleted(onNode, t0)
	v.PodDeleted(elsewhere, t0)

	v.ForgetNode("n1")
	if s, ok := v.Node("n1"); ok {
		t.Errorf("Node(n1) = %+v, true after ForgetNode; want not held", s)
	}
	if c := conditionOf(t, shown(v, kubeletNode("n1", "uid-1", t0)), corev1.NodeReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s after ForgetNode, want the real node's True", c.Status)
	}
	if at := shownDeleting(v, onNode); !at.IsZero() {
		t.Errorf("shown deleting at %v after ForgetNode(n1), want zero", at)
	}
	if at := shownDeleting(v, elsewhere); !at.Equal(t0) {
		t.Errorf("shown deleting at %v after ForgetNode(n1), want %v: a pod on another node was dropped", at, t0)
	}
}

// testPod returns a running, Ready pod bound to node.
func testPod(name string, uid types.UID, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		}},
	}
}

// podCondition returns the pod's condition of type ct, failing without one.
func podCondition(t *testing.T, pod *corev1.Pod, ct corev1.PodConditionType) corev1.PodCondition {
	t.Helper()
	for _, c := range pod.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	t.Fatalf("pod %s has no %s condition", pod.Name, ct)
	return corev1.PodCondition{}
}

// A pod the dry run marked NotReady shows NotReady, one it deleted shows
// deleting; each is recorded once.
func TestShowPod(t *testing.T) {
	markTime, deletedAt := t0.Add(time.Minute), t0.Add(2*time.Minute)
	tests := []struct {
		name         string
		mark, del    bool
		wantReady    corev1.ConditionStatus
		wantDeleting bool
	}{
		{name: "untouched", wantReady: corev1.ConditionTrue},
		{name: "marked NotReady", mark: true, wantReady: corev1.ConditionFalse},
		{name: "deleted", del: true, wantReady: corev1.ConditionTrue, wantDeleting: true},
		{name: "marked and deleted", mark: true, del: true, wantReady: corev1.ConditionFalse, wantDeleting: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView()
			pod := testPod("p1", "uid-p1", "n1")
			other := testPod("p2", "uid-p2", "n1")
			if tt.mark {
				if !v.PodMarkedNotReady(pod, markTime) {
					t.Error("PodMarkedNotReady = false the first time, want true")
				}
				if v.PodMarkedNotReady(pod, markTime.Add(time.Minute)) {
					t.Error("PodMarkedNotReady = true the second time, want false")
				}
			}
			if tt.del {
				if !v.PodDeleted(pod, deletedAt) {
					t.Error("PodDeleted = false the first time, want true")
				}
				if v.PodDeleted(pod, deletedAt.Add(time.Minute)) {
					t.Error("PodDeleted = true the second time, want false")
				}
			}

			got := pod.DeepCopy()
			v.ShowPod(got)
			ready := podCondition(t, got, corev1.PodReady)
			if ready.Status != tt.wantReady {
				t.Errorf("Ready = %s, want %s", ready.Status, tt.wantReady)
			}
			if tt.mark && !ready.LastTransitionTime.Time.Equal(markTime) {
				t.Errorf("Ready lastTransitionTime = %v, want the first mark's %v", ready.LastTransitionTime.Time, markTime)
			}
			if c := podCondition(t, got, corev1.PodScheduled); c.Status != corev1.ConditionTrue {
				t.Errorf("PodScheduled = %s, want it left True", c.Status)
			}
			switch {
			case tt.wantDeleting && (got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(deletedAt)):
				t.Errorf("DeletionTimestamp = %v, want the first deletion's %v", got.DeletionTimestamp, deletedAt)
			case !tt.wantDeleting && got.DeletionTimestamp != nil:
				t.Errorf("DeletionTimestamp = %v, want none", got.DeletionTimestamp)
			}
			wantAt := time.Time{}
			if tt.del {
				wantAt = deletedAt
			}
			if at := shownDeleting(v, pod); !at.Equal(wantAt) {
				t.Errorf("shown deleting at %v, want %v", at, wantAt)
			}

			// Another pod is shown as it is.
			o := other.DeepCopy()
			v.ShowPod(o)
			if podCondition(t, o, corev1.PodReady).Status != corev1.ConditionTrue || o.DeletionTimestamp != nil {
				t.Errorf("pod p2, untouched by the dry run, shown as %+v", o.Status)
			}

			// Forgotten, the pod is shown as it is, and may be recorded again.
			v.ForgetPod(pod.UID)
			f := pod.DeepCopy()
			v.ShowPod(f)
			if podCondition(t, f, corev1.PodReady).Status != corev1.ConditionTrue || f.DeletionTimestamp != nil {
				t.Errorf("after ForgetPod, shown as deleting %v, Ready %s; want as it is", f.DeletionTimestamp,
					podCondition(t, f, corev1.PodReady).Status)
			}
			if !shownDeleting(v, pod).IsZero() {
				t.Error("shown deleting after ForgetPod")
			}
			if !v.PodMarkedNotReady(pod, markTime) || !v.PodDeleted(pod, deletedAt) {
				t.Error("after ForgetPod, marking or deleting the pod again reported it done before")
			}
		})
	}
}

// A pod the cluster already holds as deleting keeps its own timestamp.
func TestShowPodKeepsRealDeletionTimestamp(t *testing.T) {
	v := NewView()
	pod := testPod("p1", "uid-p1", "n1")
	v.PodDeleted(pod, t0.Add(time.Minute))
	inCluster := metav1.NewTime(t0)
	pod.DeletionTimestamp = &inCluster
	v.ShowPod(pod)
	if !pod.DeletionTimestamp.Time.Equal(t0) {
		t.Errorf("DeletionTimestamp = %v, want the cluster's %v", pod.DeletionTimestamp.Time, t0)
	}
}

// shownDeleting returns when the view shows the pod deleting, zero if it
// does not.
func shownDeleting(v *View, pod *corev1.Pod) time.Time {
	shown := pod.DeepCopy()
	shown.DeletionTimestamp = nil
	v.ShowPod(shown)
	if shown.DeletionTimestamp == nil {
		return time.Time{}
	}
	return shown.DeletionTimestamp.Time
}

// The dry run's NotReady mark of a pod gives way to a Ready transition
// after it, as the kubelet's write would have replaced it, and the pod can
// be marked again.
func TestShowPodYieldsToANewerReady(t *testing.T) {
	v := NewView()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "up"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}}}
	if !v.PodMarkedNotReady(pod, t0) {
		t.Fatal("first mark not taken")
	}
	shown := pod.DeepCopy()
	v.ShowPod(shown)
	if c := shown.Status.Conditions[0]; c.Status != corev1.ConditionFalse {
		t.Fatalf("Ready = %s after the mark, want False", c.Status)
	}
	pod.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(10 * time.Minute))
	shown = pod.DeepCopy()
	v.ShowPod(shown)
	if c := shown.Status.Conditions[0]; c.Status != corev1.ConditionTrue {
		t.Fatalf("Ready = %s after the kubelet's newer Ready, want True", c.Status)
	}
	if !v.PodMarkedNotReady(pod, t0.Add(20*time.Minute)) {
		t.Error("the pod cannot be marked again after it came back")
	}
}
