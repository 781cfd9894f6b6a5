package health

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

type leaseState struct{ renew time.Time }

func (l *leaseState) object() *coordinationv1.Lease {
	if l == nil {
		return nil
	}
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To("n1"),
		LeaseDurationSeconds: ptr.To[int32](40),
		RenewTime:            &metav1.MicroTime{Time: l.renew},
	}}
}

func TestTrackerFirstObservationIsAHeartbeat(t *testing.T) {
	tr := NewTracker()
	p := PulseOf(testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), nil)
	obs := tr.Observe("n1", "a", p, t0)
	if !obs.First || !obs.Renewed || !obs.LastHeartbeat.Equal(t0) {
		t.Fatalf("first observation: %+v", obs)
	}
	obs = tr.Observe("n1", "a", p, t0.Add(time.Minute))
	if obs.First || obs.Renewed || !obs.LastHeartbeat.Equal(t0) {
		t.Fatalf("unchanged pulse: %+v", obs)
	}
	// Same name, new UID: the node was deleted and created again.
	obs = tr.Observe("n1", "b", p, t0.Add(2*time.Minute))
	if !obs.First || !obs.LastHeartbeat.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("recreated node: %+v", obs)
	}
}

func TestTrackerLeaseComingAndGoing(t *testing.T) {
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	lease := (&leaseState{renew: t0}).object()
	tr.Observe("n1", "a", PulseOf(node, lease), t0)

	// The Lease is deleted: that is no sign of life.
	if obs := tr.Observe("n1", "a", PulseOf(node, nil), t0.Add(time.Second)); obs.Renewed {
		t.Fatalf("a deleted lease counted as a heartbeat")
	}
	// It is created again with the same spec: that is one.
	if obs := tr.Observe("n1", "a", PulseOf(node, lease), t0.Add(2*time.Second)); !obs.Renewed {
		t.Fatalf("a recreated lease did not count as a heartbeat")
	}
}

func TestTrackerIgnoresTheControllersOwnNeverUpdatedMark(t *testing.T) {
	tr := NewTracker()
	node := testobj.Node("n1")
	tr.Observe("n1", "a", PulseOf(node, nil), t0)
	marked, _ := MarkUnknown(node.Status.Conditions, node.CreationTimestamp, metav1.NewTime(t0.Add(time.Minute)))
	node.Status.Conditions = marked
	if obs := tr.Observe("n1", "a", PulseOf(node, nil), t0.Add(time.Minute)); obs.Renewed {
		t.Fatal("the controller's own mark counted as a heartbeat")
	}
}

func TestTrackerMetadataOnlyLeaseChangeIsNotAHeartbeat(t *testing.T) {
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	lease := (&leaseState{renew: t0}).object()
	tr.Observe("n1", "a", PulseOf(node, lease), t0)
	lease.Labels = map[string]string{"x": "y"}
	lease.ResourceVersion = "99"
	if obs := tr.Observe("n1", "a", PulseOf(node, lease), t0.Add(time.Second)); obs.Renewed {
		t.Fatal("a metadata change counted as a heartbeat")
	}
	lease.Spec.HolderIdentity = ptr.To("someone-else")
	if obs := tr.Observe("n1", "a", PulseOf(node, lease), t0.Add(2*time.Second)); !obs.Renewed {
		t.Fatal("a spec change did not count as a heartbeat")
	}
}

func TestTrackerOverdueAndForget(t *testing.T) {
	tr := NewTracker()
	p := PulseOf(testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), nil)
	for _, n := range []string{"a", "b", "c"} {
		tr.Observe(n, "u", p, t0)
	}
	tr.Judged("a", Verdict{State: StateHealthy, Deadline: t0.Add(time.Second), Grace: time.Second})
	tr.Judged("b", Verdict{State: StateUnreachable, Deadline: t0, Grace: time.Nanosecond})
	tr.Judged("c", Verdict{State: StateHealthy, Deadline: t0.Add(time.Hour), Grace: time.Hour})
	if prev := tr.Judged("missing", Verdict{State: StateHealthy}); prev != StateUnjudged {
		t.Fatalf("unknown node had state %s", prev)
	}

	got := tr.Overdue(t0.Add(time.Second))
	if !slices.Equal(got, []string{"a"}) {
		t.Fatalf("overdue = %v, want [a]", got)
	}
	if uid, state, ok := tr.Forget("a"); !ok || uid != "u" || state != StateHealthy {
		t.Fatalf("forget = %q %s %v", uid, state, ok)
	}
	if _, _, ok := tr.Forget("a"); ok || tr.Len() != 2 {
		t.Fatal("forgotten node still tracked")
	}
}

func TestMarkUnknown(t *testing.T) {
	created := metav1.NewTime(t0.Add(-time.Hour))
	now := metav1.NewTime(t0)
	hb := metav1.NewTime(t0.Add(-time.Minute))
	in := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: hb},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown, Reason: "Custom", LastHeartbeatTime: hb},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
	}
	out, changed := MarkUnknown(in, created, now)
	if !changed {
		t.Fatal("want changed")
	}
	if in[0].Status != corev1.ConditionTrue {
		t.Fatal("input modified")
	}
	want := map[corev1.NodeConditionType]corev1.NodeCondition{
		corev1.NodeReady: {Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: ReasonUnknown,
			Message: MessageUnknown, LastHeartbeatTime: hb, LastTransitionTime: now},
		corev1.NodeMemoryPressure:     in[1],
		corev1.NodeNetworkUnavailable: in[2],
		corev1.NodeDiskPressure: {Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: ReasonNeverUpdated,
			Message: MessageNeverUpdated, LastHeartbeatTime: created, LastTransitionTime: now},
		corev1.NodePIDPressure: {Type: corev1.NodePIDPressure, Status: corev1.ConditionUnknown, Reason: ReasonNeverUpdated,
			Message: MessageNeverUpdated, LastHeartbeatTime: created, LastTransitionTime: now},
	}
	if len(out) != len(want) {
		t.Fatalf("got %d conditions, want %d", len(out), len(want))
	}
	for _, c := range out {
		if w := want[c.Type]; !c.LastHeartbeatTime.Equal(&w.LastHeartbeatTime) ||
			!c.LastTransitionTime.Equal(&w.LastTransitionTime) || c.Status != w.Status ||
			c.Reason != w.Reason || c.Message != w.Message {
			t.Errorf("%s: got %+v, want %+v", c.Type, c, w)
		}
	}
	if _, changed := MarkUnknown(out, created, metav1.NewTime(t0.Add(time.Minute))); changed {
		t.Fatal("marking twice changed something")
	}
}

func TestTrackerHearsHeartbeatsBeforeTheReconcile(t *testing.T) {
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	node.UID = "a"
	lease := &leaseState{renew: t0}
	tr.Observe("n1", "a", PulseOf(node, lease.object()), t0)

	// The informer delivers a renewal at t0+10s; the reconcile that reads
	// it runs at t0+30s and must not move the heartbeat to its own time.
	lease.renew = t0.Add(10 * time.Second)
	if !tr.HeardLease("n1", lease.object(), t0.Add(10*time.Second)).Heartbeat() {
		t.Fatal("a renewed lease was not heard as a heartbeat")
	}
	if tr.HeardLease("n1", lease.object(), t0.Add(11*time.Second)).Heartbeat() {
		t.Fatal("the same lease was heard twice")
	}
	obs := tr.Observe("n1", "a", PulseOf(node, lease.object()), t0.Add(30*time.Second))
	if obs.Renewed || !obs.LastHeartbeat.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("reconcile after the heard lease: %+v", obs)
	}

	// A status heartbeat, likewise.
	node = node.DeepCopy()
	node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(40 * time.Second))
	if !tr.HeardNode(node, t0.Add(40*time.Second)).Heartbeat() {
		t.Fatal("a new status heartbeat was not heard")
	}
	obs = tr.Observe("n1", "a", PulseOf(node, lease.object()), t0.Add(50*time.Second))
	if obs.Renewed || !obs.LastHeartbeat.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("reconcile after the heard status: %+v", obs)
	}
}

// A live read that shows a heartbeat the watch has not delivered yet is
// heard once: neither the cache's older copies, read by a look meanwhile,
// nor the watch's late delivery of the same heartbeat is heard again, for
// either part of the pulse. What the watch delivers after it is.
func TestTrackerHearsALiveReadOnceThoughTheWatchLags(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	node.UID = "a"
	status := func(s int) *corev1.Node {
		n := node.DeepCopy()
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(at(s))
		return n
	}
	cached, live := &leaseState{renew: at(25)}, &leaseState{renew: at(30)}
	tr.Observe("n1", "a", PulseOf(status(20), cached.object()), at(25))

	if obs := tr.ObserveLive("n1", "a", PulseOf(status(28), live.object()), at(45)); !obs.Renewed {
		t.Fatalf("the live read's heartbeat was not heard: %+v", obs)
	}
	// A look at what the live read returned, then at the cache's older
	// copy, then the watch's delivery of the copies between the two.
	if obs := tr.Observe("n1", "a", PulseOf(status(28), live.object()), at(46)); obs.Renewed {
		t.Fatalf("a look at the live read's own copy: %+v", obs)
	}
	if obs := tr.Observe("n1", "a", PulseOf(status(20), cached.object()), at(50)); obs.Renewed || !obs.LastHeartbeat.Equal(at(45)) {
		t.Fatalf("a look at the cache's older copy: %+v, want the live read's heartbeat at 45s to stand", obs)
	}
	if tr.HeardLease("n1", (&leaseState{renew: at(27)}).object(), at(55)).Heartbeat() || tr.HeardNode(status(24), at(55)).Heartbeat() {
		t.Fatal("the watch's late delivery of a copy from before the live read was heard")
	}
	if tr.HeardLease("n1", live.object(), at(60)).Heartbeat() || tr.HeardNode(status(28), at(60)).Heartbeat() {
		t.Fatal("the watch's late delivery of what was read live was heard again")
	}
	if got := tr.HeardAt("n1"); !got.Equal(at(45)) {
		t.Fatalf("heard at %v, want the live read's 45s", got)
	}
	// Caught up, the watch's next heartbeats are heard, and a Lease whose
	// renewTime goes back (a node clock set back) counts again.
	if !tr.HeardLease("n1", (&leaseState{renew: at(35)}).object(), at(65)).Heartbeat() ||
		!tr.HeardLease("n1", (&leaseState{renew: at(5)}).object(), at(70)).Heartbeat() ||
		!tr.HeardNode(status(3), at(75)).Heartbeat() {
		t.Fatal("a heartbeat delivered after the watch caught up was not heard")
	}
}

// A heartbeat heard off the watch needs no look only when the node was
// judged healthy and its deadline has not passed. One heard past the
// deadline needs a look even while the last verdict recorded is Healthy:
// the look at the deadline counted the node as silent, and its mark, which
// would have recorded Unreachable, may not have landed.
func TestTrackerAsksForALookOnlyOffTheHealthyPath(t *testing.T) {
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	node.UID = "a"
	lease := &leaseState{renew: t0}
	obs := tr.Observe("n1", "a", PulseOf(node, lease.object()), t0)
	tr.Judged("n1", Judge(node, obs.LastHeartbeat, grace, t0))

	lease.renew = t0.Add(10 * time.Second)
	if got := tr.HeardLease("n1", lease.object(), t0.Add(10*time.Second)); got != OnTime {
		t.Fatalf("renewal before the deadline = %v, want OnTime", got)
	}
	// The deadline (10s + 50s) passes; the look there could not mark.
	lease.renew = t0.Add(70 * time.Second)
	if got := tr.HeardLease("n1", lease.object(), t0.Add(70*time.Second)); got != NeedsLook {
		t.Fatalf("renewal past the deadline = %v, want NeedsLook", got)
	}
	// The look finds it healthy again: back on the cheap path.
	tr.Judged("n1", Judge(node, t0.Add(70*time.Second), grace, t0.Add(71*time.Second)))
	node = node.DeepCopy()
	node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(80 * time.Second))
	if got := tr.HeardNode(node, t0.Add(80*time.Second)); got != OnTime {
		t.Fatalf("status heartbeat before the deadline = %v, want OnTime", got)
	}
	// A node judged anything else needs a look on every heartbeat.
	tr.Judged("n1", Verdict{State: StateNotReady, Grace: grace.Monitor})
	lease.renew = t0.Add(90 * time.Second)
	if got := tr.HeardLease("n1", lease.object(), t0.Add(90*time.Second)); got != NeedsLook {
		t.Fatalf("renewal of a NotReady node = %v, want NeedsLook", got)
	}
}

func TestTrackerHearsOnlyTrackedNodes(t *testing.T) {
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	node.UID = "a"
	if tr.HeardNode(node, t0).Heartbeat() || tr.HeardLease("n1", (&leaseState{renew: t0}).object(), t0).Heartbeat() {
		t.Fatal("an untracked node was heard: its first observation belongs to the reconcile")
	}
	tr.Observe("n1", "a", PulseOf(node, nil), t0)
	other := node.DeepCopy()
	other.UID = "b"
	other.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Second))
	if tr.HeardNode(other, t0.Add(time.Second)).Heartbeat() {
		t.Fatal("a node recreated under another UID was heard as the old one")
	}
	// A Lease appearing where there was none is a heartbeat, as in Observe.
	if !tr.HeardLease("n1", &coordinationv1.Lease{}, t0.Add(2*time.Second)).Heartbeat() {
		t.Fatal("a lease appearing was not heard")
	}
	// Judged with a 10s grace from the heard lease: fading from 5s on.
	tr.Judged("n1", Verdict{State: StateHealthy, Deadline: t0.Add(12 * time.Second), Grace: 10 * time.Second})
	if got := tr.Quiet(t0.Add(6*time.Second), time.Minute).Fading; len(got) != 0 {
		t.Fatalf("Fading = %v 4s after a heard lease", got)
	}
}

func TestTrackerFadingUsesEachNodesOwnGrace(t *testing.T) {
	tr := NewTracker()
	for _, n := range []struct {
		name  string
		grace time.Duration
	}{{"short", 10 * time.Second}, {"long", time.Minute}, {"unjudged", 0}} {
		tr.Observe(n.name, types.UID(n.name), PulseOf(testobj.Node(n.name, testobj.Ready(corev1.ConditionTrue)), nil), t0)
		if n.grace > 0 {
			tr.Judged(n.name, Verdict{State: StateHealthy, Deadline: t0.Add(n.grace), Grace: n.grace})
		}
	}
	if got := tr.Quiet(t0.Add(4*time.Second), time.Minute).Fading; len(got) != 0 {
		t.Fatalf("Fading at 4s = %v", got)
	}
	if got := tr.Quiet(t0.Add(5*time.Second), time.Minute).Fading; !slices.Equal(got, []string{"short"}) {
		t.Fatalf("Fading at 5s = %v, want [short]", got)
	}
	got := tr.Quiet(t0.Add(time.Minute), time.Minute).Fading
	slices.Sort(got)
	if !slices.Equal(got, []string{"long", "short"}) {
		t.Fatalf("Fading at 1m = %v, want [long short]", got)
	}
}

func TestTrackerExcusesAnOutage(t *testing.T) {
	const grace = 50 * time.Second
	tr := NewTracker()
	heard := map[string]time.Time{
		"before":     t0,                       // heard 20s before the outage
		"within":     t0.Add(30 * time.Second), // heard while the controller was blind
		"after":      t0.Add(90 * time.Second), // heard after it ended
		"long-quiet": t0.Add(-40 * time.Second),
	}
	for name, at := range heard {
		tr.Observe(name, types.UID(name), PulseOf(testobj.Node(name, testobj.Ready(corev1.ConditionTrue)), nil), at)
		tr.Judged(name, Verdict{State: StateHealthy, Deadline: at.Add(grace), Grace: grace})
	}
	from, to := t0.Add(20*time.Second), t0.Add(80*time.Second)
	tr.Excuse(from, to)

	want := map[string]time.Time{
		"before":     t0.Add(60 * time.Second), // moved on by the outage's 60s
		"within":     to,
		"after":      t0.Add(90 * time.Second),
		"long-quiet": t0.Add(20 * time.Second),
	}
	for name, at := range want {
		obs := tr.Observe(name, types.UID(name), PulseOf(testobj.Node(name, testobj.Ready(corev1.ConditionTrue)), nil), to)
		if !obs.LastHeartbeat.Equal(at) {
			t.Errorf("%s: last heartbeat %v after the outage, want %v", name, obs.LastHeartbeat.Sub(t0), at.Sub(t0))
		}
	}
	// Deadlines move with the heartbeats: a node already past its
	// deadline when the outage began is still past it, and only it.
	if got := tr.Overdue(to); !slices.Equal(got, []string{"long-quiet"}) {
		t.Errorf("Overdue at the end of the outage = %v, want [long-quiet]", got)
	}
	if got := tr.Quiet(to, grace).Fading; !slices.Equal(got, []string{"long-quiet"}) {
		t.Errorf("Fading at the end of the outage = %v, want [long-quiet]", got)
	}
}

// TestTrackerQuietCountsOnlyFreshSilences: the partition freeze is about
// nodes going quiet together now. A node whose grace ran out more than a
// window ago, or one already marked Unknown when first observed, is old
// news: it is not fading, however long it stays silent. Decided counts the
// nodes known to live or to be going quiet.
func TestTrackerQuietCountsOnlyFreshSilences(t *testing.T) {
	const grace, window = 10 * time.Second, 10 * time.Second
	tr := NewTracker()
	judge := func(name string) {
		tr.Judged(name, Verdict{State: StateHealthy, Grace: grace})
	}
	ready := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	marked := testobj.Node("n1", testobj.Ready(corev1.ConditionUnknown))
	// Observed at t0: "dead" and "quiet" never heard again, "alive"
	// renews its Lease, "marked" was already Unknown.
	for _, name := range []string{"dead", "quiet", "alive"} {
		tr.Observe(name, types.UID(name), PulseOf(ready, nil), t0)
		judge(name)
	}
	tr.Observe("marked", "marked", PulseOf(marked, nil), t0)
	judge("marked")
	if q := tr.Quiet(t0.Add(time.Second), window); len(q.Fading) != 0 || q.Decided != 1 {
		t.Fatalf("at 1s: %+v; want nothing fading and the marked node decided", q)
	}
	tr.HeardLease("alive", (&leaseState{renew: t0.Add(4 * time.Second)}).object(), t0.Add(4*time.Second))
	q := tr.Quiet(t0.Add(5*time.Second), window)
	slices.Sort(q.Fading)
	if !slices.Equal(q.Fading, []string{"dead", "quiet"}) || q.Decided != 4 {
		t.Fatalf("at 5s: %+v; want dead and quiet fading, all four decided", q)
	}
	// Past grace and window, the silent ones are no longer fading, but
	// they stay decided.
	q = tr.Quiet(t0.Add(grace+window+time.Second), window)
	if !slices.Contains(q.Fading, "alive") || slices.Contains(q.Fading, "dead") || q.Decided != 4 {
		t.Fatalf("at 21s: %+v; want only alive fading, all four decided", q)
	}
	// A heartbeat from the marked node makes it an ordinary node.
	tr.HeardLease("marked", (&leaseState{renew: t0.Add(30 * time.Second)}).object(), t0.Add(30*time.Second))
	if q := tr.Quiet(t0.Add(36*time.Second), window); !slices.Contains(q.Fading, "marked") {
		t.Fatalf("at 36s: %+v; the marked node, heard at 30s, should be fading", q)
	}
}
