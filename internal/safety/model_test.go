package safety

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var settings = policy.Settings{
	Grace:              health.Grace{Monitor: 40 * time.Second, Startup: time.Minute},
	PodEvictionTimeout: 5 * time.Minute,
	MaintenanceGrace:   time.Hour,
}

func newModel() *Model {
	return New(health.NewTracker(), disruption.NewGuard(disruption.Config{
		Rates:                  disruption.Rates{Normal: 1, Secondary: 0.1, LargeClusterSizeThreshold: 50},
		UnhealthyZoneThreshold: 0.55, FreezeThreshold: 0.6, FreezeWindow: 40 * time.Second, FreezeCooldown: 40 * time.Second,
	}), 40*time.Second)
}

// alive is when the nodes of these tests last heartbeat, and marked when
// the dead ones were marked.
var (
	alive  = t0.Add(time.Minute)
	marked = alive.Add(settings.Grace.Monitor)
)

// node returns a node of zone z whose Ready condition has the given status
// since since, and a heartbeat at alive, with the given extra conditions.
func node(name string, ready corev1.ConditionStatus, since time.Time, extra ...corev1.NodeCondition) *corev1.Node {
	c := testobj.Condition(corev1.NodeReady, ready, since)
	c.LastHeartbeatTime = metav1.NewTime(alive)
	n := testobj.Node(name, testobj.Labels(map[string]string{corev1.LabelTopologyZone: "z"}), testobj.Conditions(c))
	if ready == corev1.ConditionUnknown {
		// Marked as the controller marks: every condition it owns Unknown.
		n.Status.Conditions[0].Status = corev1.ConditionTrue
		n.Status.Conditions, _ = health.MarkUnknown(n.Status.Conditions, n.CreationTimestamp, metav1.NewTime(since))
	}
	n.Status.Conditions = append(n.Status.Conditions, extra...)
	return n
}

// look has the model look at a node at now, with the node's Lease.
func look(m *Model, n *corev1.Node, now time.Time) Decision {
	return m.Look(Input{Node: n, Lease: testobj.Lease(n.Name, n.Name, t0), Settings: settings, Now: now, Stamp: now})
}

// beat has the model hear a heartbeat of each node at at.
func beat(m *Model, at time.Time, nodes ...*corev1.Node) {
	for _, n := range nodes {
		n = n.DeepCopy()
		health.ReadyCondition(n).LastHeartbeatTime = metav1.NewTime(at)
		m.tracker.HeardNode(n, at)
	}
}

// seed seeds the model with the nodes at t0, has it look at each then, and
// hear each at alive, which ends its wait after start.
func seed(t *testing.T, m *Model, nodes ...*corev1.Node) {
	t.Helper()
	m.Seed(nodes, func(*corev1.Node) policy.Settings { return settings }, Kept{}, t0, t0)
	for _, n := range nodes {
		early := n.DeepCopy()
		health.ReadyCondition(early).LastHeartbeatTime = metav1.NewTime(t0)
		look(m, early, t0)
	}
	for _, n := range nodes {
		look(m, n, alive)
	}
	if c, _ := m.Tick(alive, false); !c.Decided {
		t.Fatalf("the wait after start did not end: %+v", c)
	}
}

// A node in maintenance that is still Ready counts as Ready: three real
// deaths beside six drained spares are a third of the zone, not three of
// four, and are tainted.
func TestReadyNodesInMaintenanceCountAsReady(t *testing.T) {
	m := newModel()
	drained := corev1.NodeCondition{Type: corev1.NodeDrained, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}
	var nodes []*corev1.Node
	for i := range 6 {
		nodes = append(nodes, node(fmt.Sprint("spare-", i), corev1.ConditionTrue, t0, drained))
	}
	for i := range 4 {
		nodes = append(nodes, node(fmt.Sprint("n-", i), corev1.ConditionTrue, t0))
	}
	seed(t, m, nodes...)

	beat(m, marked, append(nodes[:6:6], nodes[9])...)
	var ds []Decision
	for i := range 3 {
		ds = append(ds, look(m, node(fmt.Sprint("n-", i), corev1.ConditionUnknown, marked), marked))
	}
	if z := m.guard.Snapshot().Zones[disruption.ZoneID{Zone: "/z"}]; z.State != disruption.ZoneNormal || z.Ready != 7 || z.NotReady != 3 {
		t.Fatalf("zone = %+v, want Normal with 7 Ready and 3 not", z)
	}
	for i, d := range ds {
		if d.Held != "" {
			t.Errorf("dead node %d held: %s", i, d.Held)
		}
	}
	if w := ds[0].Write; w == nil || w.Added != corev1.TaintNodeUnreachable {
		t.Errorf("the first dead node's write = %+v, want it tainted", w)
	}
	if ds[2].Waiting != disruption.HeldRate {
		t.Errorf("the third dead node waits for %q, want its zone's rate", ds[2].Waiting)
	}
}

// Pods are marked NotReady only on a node the controller found silent: a
// kubelet that reports Ready=False keeps its pods' readiness.
func TestPodsAreMarkedOnlyOnSilentNodes(t *testing.T) {
	m := newModel()
	seed(t, m, node("a", corev1.ConditionTrue, t0), node("b", corev1.ConditionTrue, t0), node("c", corev1.ConditionTrue, t0))
	if d := look(m, node("a", corev1.ConditionFalse, alive), alive); d.MarkPods || d.Want != corev1.TaintNodeNotReady {
		t.Fatalf("Ready=False: mark pods %v, want %q; want no pods marked and a not-ready taint", d.MarkPods, d.Want)
	}
	beat(m, marked, node("a", corev1.ConditionFalse, alive), node("c", corev1.ConditionTrue, t0))
	silent := node("b", corev1.ConditionUnknown, marked)
	if d := look(m, silent, marked); !d.MarkPods {
		t.Fatal("Unknown: pods not marked")
	}
	pods := []corev1.Pod{readyPod("p1"), readyPod("p2")}
	m.PodMarked(silent, "p1")
	if got := m.PodsToMark(silent, pods); len(got) != 1 || got[0].UID != "p2" {
		t.Fatalf("pods to mark = %v, want only p2: p1 was marked in this silence", got)
	}
	if got := m.PodsToMark(node("b", corev1.ConditionUnknown, marked.Add(time.Minute)), pods); len(got) != 2 {
		t.Fatalf("pods to mark in a new silence = %d, want both", len(got))
	}
}

// Every live read is heard, whatever the node's Ready status and whichever
// check reads it: a heartbeat it shows dates the node's silence from the
// read, and the watch event that brings the same heartbeat later changes
// nothing.
func TestEveryLiveReadIsHeard(t *testing.T) {
	m := newModel()
	seed(t, m, node("a", corev1.ConditionTrue, t0), node("b", corev1.ConditionFalse, t0), node("c", corev1.ConditionUnknown, t0))
	read := alive.Add(30 * time.Second)
	back := func(n *corev1.Node, l *coordinationv1.Lease) { m.Back(n, l, settings.Grace.Monitor, read) }
	silent := func(n *corev1.Node, l *coordinationv1.Lease) { m.Silent(n, l, settings.Grace.Monitor, read) }
	for _, tc := range []struct {
		name  string
		ready corev1.ConditionStatus
		check func(*corev1.Node, *coordinationv1.Lease)
	}{
		{"a", corev1.ConditionTrue, back},
		{"b", corev1.ConditionFalse, silent},
		{"c", corev1.ConditionUnknown, back},
	} {
		lease := testobj.Lease(tc.name, tc.name, alive.Add(25*time.Second))
		tc.check(node(tc.name, tc.ready, t0), lease)
		if got := m.tracker.HeardAt(tc.name); !got.Equal(read) {
			t.Errorf("%s (Ready %s): heard at %v after a live read at %v", tc.name, tc.ready, got, read)
		}
		if m.tracker.HeardLease(tc.name, lease, read.Add(10*time.Second)).Heartbeat() {
			t.Errorf("%s: the watch's late copy of the Lease read live counted as a heartbeat", tc.name)
		}
	}
}

// A node's next look is the earliest asked for, but a deadline replaces the
// one before it, and no deadline drops a deadline and nothing else.
func TestNextOver(t *testing.T) {
	early, late := t0, t0.Add(time.Minute)
	deadline := func(at time.Time) Next { return Next{At: at, Deadline: true} }
	for _, tc := range []struct {
		name      string
		next, old Next
		set       bool
		want      Next
		stands    bool
	}{
		{"first", Next{At: late}, Next{}, false, Next{At: late}, true},
		{"a later retry waits", Next{At: late}, Next{At: early}, true, Next{At: early}, true},
		{"an earlier retry comes first", Next{At: early}, deadline(late), true, Next{At: early}, true},
		{"a moved deadline replaces the old", deadline(late), deadline(early), true, deadline(late), true},
		{"a deadline waits behind a retry", deadline(late), Next{At: early}, true, Next{At: early}, true},
		{"no deadline drops one", Next{Deadline: true}, deadline(early), true, Next{}, false},
		{"no deadline keeps a retry", Next{Deadline: true}, Next{At: early}, true, Next{At: early}, true},
		{"nothing asked", Next{}, Next{}, false, Next{}, false},
	} {
		if got, stands := tc.next.Over(tc.old, tc.set); stands != tc.stands || stands && got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, stands, tc.want, tc.stands)
		}
	}
}

func readyPod(uid string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// The safety resync looks again at a node short of its taint with nothing
// to wait for, and at a Ready node that kept one; not at a held one.
func TestStray(t *testing.T) {
	m := newModel()
	var nodes []*corev1.Node
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		nodes = append(nodes, node(name, corev1.ConditionTrue, t0))
	}
	seed(t, m, nodes...)
	later := marked
	beat(m, later, nodes[1:]...)
	dead := node("a", corev1.ConditionUnknown, later)
	look(m, dead, later)
	if !m.Stray(dead, settings, later) {
		t.Error("a dead node under no hold, without its taint, is not stray")
	}
	tainted := dead.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeUnreachable, later)}
	if m.Stray(tainted, settings, later) {
		t.Error("a dead node with its taint is stray")
	}
	back := node("b", corev1.ConditionTrue, later)
	back.Spec.Taints = tainted.Spec.Taints
	if !m.Stray(back, settings, later) {
		t.Error("a Ready node that kept its taint is not stray")
	}
	maintained := node("c", corev1.ConditionUnknown, later,
		corev1.NodeCondition{Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(later)})
	look(m, maintained, later)
	if m.Stray(maintained, settings, later.Add(time.Minute)) {
		t.Error("a node held for its maintenance is stray within its grace")
	}
	if !m.Stray(maintained, settings, later.Add(2*time.Hour)) {
		t.Error("a node whose maintenance grace ran out since its last look is not stray")
	}
}

// TestOutagesKeptOnTheAPIServersClock: the outages a leader lived through
// are kept on the apiserver's clock, and a new leader whose clock runs
// differently takes them up on its own; a record that does not parse is an
// error.
func TestOutagesKeptOnTheAPIServersClock(t *testing.T) {
	old := newModel()
	skew := 3 * time.Second // the old leader's clock runs ahead
	old.Seed(nil, func(*corev1.Node) policy.Settings { return settings }, Kept{}, t0.Add(skew), t0)
	old.Excuse(alive.Add(skew), alive.Add(skew+30*time.Second), alive.Add(skew+30*time.Second))
	v := EncodeUnwatched(old.UnwatchedSpans(alive.Add(skew + 31*time.Second)))
	spans, err := DecodeUnwatched(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || !spans[0].From.Equal(alive) || !spans[0].To.Equal(alive.Add(30*time.Second)) {
		t.Fatalf("kept %v, want the outage on the apiserver's clock", spans)
	}

	behind := 2 * time.Second // the new leader's clock runs behind
	m := newModel()
	now := alive.Add(40 * time.Second)
	m.Seed(nil, func(*corev1.Node) policy.Settings { return settings }, Kept{Unwatched: spans}, now.Add(-behind), now)
	if got := m.guard.Excused(now.Add(-behind)); len(got) != 1 || !got[0].From.Equal(alive.Add(-behind)) {
		t.Fatalf("the new leader excuses %v, want the outage on its own clock", got)
	}

	for _, bad := range []string{`{`, `[{"from":"2026-11-26T00:01:00Z","to":"2026-11-26T00:00:00Z"}]`, `[{}]`} {
		if _, err := DecodeUnwatched(bad); err == nil {
			t.Errorf("DecodeUnwatched(%s) accepted", bad)
		}
	}
}
