package shadow

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fixture is a dry run over a fake cluster holding node n1 and its pods
// ns/p1 and ns/p2.
type fixture struct {
	ctx     context.Context
	s       *Shadow
	clk     *clocktesting.FakeClock
	cluster client.Client
	dry     client.Client
	// node and pods are the objects as the cluster first held them.
	node *corev1.Node
	pods []*corev1.Pod
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	objs := []client.Object{kubeletNode("n1", "uid-n1", t0), testPod("p1", "uid-p1", "n1"), testPod("p2", "uid-p2", "n1")}
	cluster := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).Build()
	clk := clocktesting.NewFakeClock(t0)
	s := New(NewRecord(), clk, nil)
	f := &fixture{ctx: ctrl.LoggerInto(t.Context(), testr.New(t)), s: s, clk: clk, cluster: cluster, dry: s.Client(cluster)}
	f.node = f.clusterNode(t)
	f.pods = []*corev1.Pod{f.clusterPod(t, "p1"), f.clusterPod(t, "p2")}
	return f
}

// clusterNode reads n1 from the fake cluster, past the dry run.
func (f *fixture) clusterNode(t *testing.T) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := f.cluster.Get(f.ctx, client.ObjectKey{Name: "n1"}, node); err != nil {
		t.Fatalf("get node n1 from the cluster: %v", err)
	}
	return node
}

// clusterPod reads ns/name from the fake cluster, past the dry run.
func (f *fixture) clusterPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := f.cluster.Get(f.ctx, client.ObjectKey{Namespace: "ns", Name: name}, pod); err != nil {
		t.Fatalf("get pod ns/%s from the cluster: %v", name, err)
	}
	return pod
}

// dryNode reads n1 through the dry run.
func (f *fixture) dryNode(t *testing.T) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := f.dry.Get(f.ctx, client.ObjectKey{Name: "n1"}, node); err != nil {
		t.Fatalf("get node n1 through the dry run: %v", err)
	}
	return node
}

// dryPod reads ns/name through the dry run.
func (f *fixture) dryPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := f.dry.Get(f.ctx, client.ObjectKey{Namespace: "ns", Name: name}, pod); err != nil {
		t.Fatalf("get pod ns/%s through the dry run: %v", name, err)
	}
	return pod
}

// assertClusterUnchanged fails if the cluster's objects differ from those
// it first held, or it holds any other.
func (f *fixture) assertClusterUnchanged(t *testing.T) {
	t.Helper()
	if node := f.clusterNode(t); !equality.Semantic.DeepEqual(node, f.node) {
		t.Errorf("node n1 in the cluster changed:\n got %+v\nwant %+v", node, f.node)
	}
	for _, want := range f.pods {
		if pod := f.clusterPod(t, want.Name); !equality.Semantic.DeepEqual(pod, want) {
			t.Errorf("pod ns/%s in the cluster changed:\n got %+v\nwant %+v", want.Name, pod, want)
		}
	}
	nodes := &corev1.NodeList{}
	if err := f.cluster.List(f.ctx, nodes); err != nil || len(nodes.Items) != 1 {
		t.Errorf("cluster nodes: %d, err %v; want n1 alone", len(nodes.Items), err)
	}
	pods := &corev1.PodList{}
	if err := f.cluster.List(f.ctx, pods); err != nil || len(pods.Items) != len(f.pods) {
		t.Errorf("cluster pods: %d, err %v; want %d", len(pods.Items), err, len(f.pods))
	}
	cms := &corev1.ConfigMapList{}
	if err := f.cluster.List(f.ctx, cms); err != nil || len(cms.Items) != 0 {
		t.Errorf("cluster configmaps: %d, err %v; want none", len(cms.Items), err)
	}
}

// nudged returns the names of the nodes sent on Nudges so far.
func nudged(s *Shadow) []string {
	var out []string
	for {
		select {
		case e := <-s.Nudges():
			out = append(out, e.Object.Name)
		default:
			return out
		}
	}
}

// podNotReadyPatch marks the pod Ready=False, as the node health controller
// does.
func podNotReadyPatch(t *testing.T, f *fixture, name string) error {
	t.Helper()
	pod := f.dryPod(t, name)
	base := pod.DeepCopy()
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodReady {
			c.Status = corev1.ConditionFalse
			c.LastTransitionTime = metav1.NewTime(f.clk.Now())
		}
	}
	return f.dry.Status().Patch(f.ctx, pod, client.StrategicMergeFrom(base))
}

// stampAhead is how far ahead of the local clock the node health
// controller stamps what it writes.
const stampAhead = 2 * time.Second

// nodeMarkPatch marks n1's lifecycle conditions Unknown with a status
// patch, stamped ahead of the clock as the node health controller does.
func nodeMarkPatch(t *testing.T, f *fixture) error {
	t.Helper()
	node := f.dryNode(t)
	base := node.DeepCopy()
	node.Status.Conditions = markedAt(t, node, f.clk.Now().Add(stampAhead)).Status.Conditions
	return f.dry.Status().Patch(f.ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// nodeTaintPatch sets n1's taints with a spec patch.
func nodeTaintPatch(t *testing.T, f *fixture, ts ...corev1.Taint) error {
	t.Helper()
	node := f.dryNode(t)
	base := node.DeepCopy()
	node.Spec.Taints = ts
	return f.dry.Patch(f.ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// No write through the dry run reaches the cluster, and none fails.
func TestClientWritesNothing(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, f *fixture) error
	}{
		{name: "node spec patch", write: func(t *testing.T, f *fixture) error {
			return nodeTaintPatch(t, f, noExecute(corev1.TaintNodeUnreachable, t0), noSchedule(corev1.TaintNodeUnreachable))
		}},
		{name: "node status patch", write: nodeMarkPatch},
		{name: "node update", write: func(t *testing.T, f *fixture) error {
			node := f.dryNode(t)
			node.Labels = map[string]string{"example.com/l": "v"}
			node.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeNotReady, t0)}
			return f.dry.Update(f.ctx, node)
		}},
		{name: "node status update", write: func(t *testing.T, f *fixture) error {
			return f.dry.Status().Update(f.ctx, markedAt(t, f.dryNode(t), t0))
		}},
		{name: "node delete", write: func(t *testing.T, f *fixture) error {
			return f.dry.Delete(f.ctx, f.dryNode(t))
		}},
		{name: "node create", write: func(_ *testing.T, f *fixture) error {
			return f.dry.Create(f.ctx, kubeletNode("n2", "", t0))
		}},
		{name: "pod delete", write: func(t *testing.T, f *fixture) error {
			pod := f.dryPod(t, "p1")
			return f.dry.Delete(f.ctx, pod, client.Preconditions{UID: &pod.UID})
		}},
		{name: "pod eviction", write: func(t *testing.T, f *fixture) error {
			pod := f.dryPod(t, "p1")
			return f.dry.SubResource("eviction").Create(f.ctx, pod,
				&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}})
		}},
		{name: "pod status patch", write: func(t *testing.T, f *fixture) error {
			return podNotReadyPatch(t, f, "p1")
		}},
		{name: "pod status update", write: func(t *testing.T, f *fixture) error {
			pod := f.dryPod(t, "p1")
			pod.Status.Phase = corev1.PodFailed
			return f.dry.Status().Update(f.ctx, pod)
		}},
		{name: "pod patch", write: func(t *testing.T, f *fixture) error {
			pod := f.dryPod(t, "p1")
			base := pod.DeepCopy()
			pod.Labels = map[string]string{"example.com/l": "v"}
			return f.dry.Patch(f.ctx, pod, client.MergeFrom(base))
		}},
		{name: "pod update", write: func(t *testing.T, f *fixture) error {
			pod := f.dryPod(t, "p1")
			pod.Labels = map[string]string{"example.com/l": "v"}
			return f.dry.Update(f.ctx, pod)
		}},
		{name: "pod create", write: func(_ *testing.T, f *fixture) error {
			return f.dry.Create(f.ctx, testPod("p3", "", "n1"))
		}},
		{name: "pods delete all", write: func(_ *testing.T, f *fixture) error {
			return f.dry.DeleteAllOf(f.ctx, &corev1.Pod{}, client.InNamespace("ns"))
		}},
		{name: "configmap create", write: func(_ *testing.T, f *fixture) error {
			return f.dry.Create(f.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
				Data: map[string]string{"k": "v"}})
		}},
		{name: "configmap apply", write: func(_ *testing.T, f *fixture) error {
			return f.dry.Apply(f.ctx, corev1ac.ConfigMap("cm", "ns").WithData(map[string]string{"k": "v"}),
				client.FieldOwner("test"))
		}},
		{name: "node status apply", write: func(_ *testing.T, f *fixture) error {
			return f.dry.Status().Apply(f.ctx, corev1ac.Node("n1").WithStatus(corev1ac.NodeStatus().
				WithConditions(corev1ac.NodeCondition().WithType(corev1.NodeReady).WithStatus(corev1.ConditionUnknown))),
				client.FieldOwner("test"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.clk.Step(time.Minute)
			if err := tt.write(t, f); err != nil {
				t.Fatalf("write through the dry run: %v", err)
			}
			f.assertClusterUnchanged(t)
		})
	}
}

// A status patch marking a node Unknown is this controller's mark: the
// Record has it, timed by the local clock rather than by the stamp
// written, and reads through the dry run show it.
func TestClientNodeStatusPatchMarks(t *testing.T) {
	f := newFixture(t)
	f.clk.Step(40 * time.Second)
	markTime := f.clk.Now()
	if err := nodeMarkPatch(t, f); err != nil {
		t.Fatalf("status patch: %v", err)
	}

	e := onlyEpisode(t, f.s.Record)
	if e.Node != "n1" || !equalTime(e.Ours.Marked, markTime) {
		t.Errorf("episode node %s Ours.Marked %v, want n1 marked at %v", e.Node, e.Ours.Marked, markTime)
	}
	if e.Upstream.Marked != nil || e.Ours.NoExecute != "" {
		t.Errorf("episode = %+v, want our mark alone", e)
	}
	if got := conditionOf(t, f.dryNode(t), corev1.NodeReady); got.Status != corev1.ConditionUnknown ||
		!got.LastTransitionTime.Time.Equal(markTime.Add(stampAhead)) {
		t.Errorf("Ready read through the dry run = %s since %v, want Unknown since the stamp written, %v",
			got.Status, got.LastTransitionTime.Time, markTime.Add(stampAhead))
	}
	if s, _ := f.s.View.Node("n1"); !s.Marked.Equal(markTime.Add(stampAhead)) {
		t.Errorf("View.Node(n1).Marked = %v, want the stamp written, %v", s.Marked, markTime.Add(stampAhead))
	}
	nodes := &corev1.NodeList{}
	if err := f.dry.List(f.ctx, nodes); err != nil {
		t.Fatalf("list nodes through the dry run: %v", err)
	}
	if len(nodes.Items) != 1 || conditionOf(t, &nodes.Items[0], corev1.NodeReady).Status != corev1.ConditionUnknown {
		t.Errorf("nodes listed through the dry run: %+v, want n1 Unknown", nodes.Items)
	}
	if got := conditionOf(t, f.clusterNode(t), corev1.NodeReady); got.Status != corev1.ConditionTrue {
		t.Errorf("Ready in the cluster = %s, want True", got.Status)
	}
	// The marked node written again is not marked again.
	f.clk.Step(time.Minute)
	node := f.dryNode(t)
	if err := f.dry.Status().Patch(f.ctx, node, client.MergeFrom(node.DeepCopy())); err != nil {
		t.Fatalf("second status patch: %v", err)
	}
	if e := onlyEpisode(t, f.s.Record); !equalTime(e.Ours.Marked, markTime) {
		t.Errorf("Ours.Marked = %v after a second patch, want %v", e.Ours.Marked, markTime)
	}
	if n := nudged(f.s); len(n) != 0 {
		t.Errorf("nudged %v for a status write, want none", n)
	}
}

// A spec patch adding a lifecycle NoExecute taint is this controller's
// taint: the Record has it, timed by the local clock whatever timeAdded
// says, and the pod eviction controller is nudged.
func TestClientNodeSpecPatchTaints(t *testing.T) {
	tests := []struct {
		name      string
		timeAdded *metav1.Time
	}{
		{name: "stamped ahead of the clock", timeAdded: ptr(metav1.NewTime(t0.Add(time.Minute + stampAhead)))},
		{name: "kept from an earlier taint", timeAdded: ptr(metav1.NewTime(t0.Add(30 * time.Second)))},
		{name: "untimed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.clk.Step(time.Minute)
			want := f.clk.Now()
			taint := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: tt.timeAdded}
			if err := nodeTaintPatch(t, f, taint, noSchedule("example.com/x")); err != nil {
				t.Fatalf("spec patch: %v", err)
			}

			e := onlyEpisode(t, f.s.Record)
			if e.Ours.NoExecute != corev1.TaintNodeUnreachable || !equalTime(e.Ours.NoExecuteAdded, want) {
				t.Errorf("Ours = %s added %v, want %s added %v", e.Ours.NoExecute, e.Ours.NoExecuteAdded, corev1.TaintNodeUnreachable, want)
			}
			if n := nudged(f.s); !slices.Equal(n, []string{"n1"}) {
				t.Errorf("nudged %v, want [n1]", n)
			}
			if g := taintKeys(f.dryNode(t)); !slices.Contains(g, corev1.TaintNodeUnreachable+":NoExecute") {
				t.Errorf("taints read through the dry run = %v, want the unreachable NoExecute taint", g)
			}
			if g := taintKeys(f.clusterNode(t)); len(g) != 0 {
				t.Errorf("taints in the cluster = %v, want none", g)
			}
		})
	}
}

// Taking a Ready node's NoExecute taint off ends the episode, when the
// other controller's node is healthy too.
func TestClientNodeUntaintRecovers(t *testing.T) {
	f := newFixture(t)
	if err := nodeTaintPatch(t, f, noExecute(corev1.TaintNodeNotReady, t0)); err != nil {
		t.Fatalf("taint: %v", err)
	}
	f.s.Record.UpstreamHealth("n1", true)
	f.clk.Step(time.Minute)
	if err := nodeTaintPatch(t, f); err != nil {
		t.Fatalf("untaint: %v", err)
	}
	if e := onlyEpisode(t, f.s.Record); !equalTime(e.Ended, t0.Add(time.Minute)) {
		t.Errorf("Ended = %v, want %v", e.Ended, t0.Add(time.Minute))
	}
	if n := nudged(f.s); !slices.Equal(n, []string{"n1", "n1"}) {
		t.Errorf("nudged %v, want n1 for the taint and for its removal", n)
	}
}

// A pod deleted or evicted through the dry run is this controller's
// eviction, counted once, and reads as deleting.
func TestClientPodDelete(t *testing.T) {
	f := newFixture(t)
	f.clk.Step(time.Minute)
	at := f.clk.Now()
	pod := f.dryPod(t, "p1")
	for range 2 {
		if err := f.dry.Delete(f.ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	f.clk.Step(time.Minute)
	if err := f.dry.SubResource("eviction").Create(f.ctx, f.dryPod(t, "p2"), &policyv1.Eviction{}); err != nil {
		t.Fatalf("evict: %v", err)
	}

	e := onlyEpisode(t, f.s.Record)
	if e.Node != "n1" || e.Ours.Evicted != 2 || !slices.Equal(e.Ours.Pods, []string{"ns/p1", "ns/p2"}) {
		t.Errorf("episode node %s Ours.Evicted %d pods %v, want n1, 2, [ns/p1 ns/p2]", e.Node, e.Ours.Evicted, e.Ours.Pods)
	}
	if !equalTime(e.Ours.FirstEviction, at) || e.Upstream.Evicted != 0 {
		t.Errorf("Ours.FirstEviction %v Upstream.Evicted %d, want %v and 0", e.Ours.FirstEviction, e.Upstream.Evicted, at)
	}

	if got := f.dryPod(t, "p1"); got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(at) {
		t.Errorf("pod p1 read through the dry run: DeletionTimestamp %v, want %v", got.DeletionTimestamp, at)
	}
	pods := &corev1.PodList{}
	if err := f.dry.List(f.ctx, pods, client.InNamespace("ns")); err != nil {
		t.Fatalf("list pods through the dry run: %v", err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s listed through the dry run is not deleting", p.Name)
		}
	}
	if len(pods.Items) != 2 {
		t.Errorf("listed %d pods through the dry run, want 2", len(pods.Items))
	}
	if got := f.clusterPod(t, "p1"); got.DeletionTimestamp != nil {
		t.Errorf("pod p1 in the cluster is deleting: %v", got.DeletionTimestamp)
	}
}

// A status patch making a pod NotReady shows it NotReady through the dry
// run; one leaving it Ready changes nothing.
func TestClientPodStatusPatch(t *testing.T) {
	f := newFixture(t)
	f.clk.Step(time.Minute)
	if err := podNotReadyPatch(t, f, "p1"); err != nil {
		t.Fatalf("status patch: %v", err)
	}
	pod := f.dryPod(t, "p2")
	base := pod.DeepCopy()
	pod.Status.Message = "still ready"
	if err := f.dry.Status().Patch(f.ctx, pod, client.StrategicMergeFrom(base)); err != nil {
		t.Fatalf("status patch: %v", err)
	}

	if c := podCondition(t, f.dryPod(t, "p1"), corev1.PodReady); c.Status != corev1.ConditionFalse ||
		!c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("p1 Ready read through the dry run = %s since %v, want False since %v", c.Status, c.LastTransitionTime.Time, t0.Add(time.Minute))
	}
	if c := podCondition(t, f.dryPod(t, "p2"), corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("p2 Ready read through the dry run = %s, want True", c.Status)
	}
	if c := podCondition(t, f.clusterPod(t, "p1"), corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("p1 Ready in the cluster = %s, want True", c.Status)
	}
	if es := episodes(f.s.Record); len(es) != 0 {
		t.Errorf("Record = %+v, want no episode for a pod marked NotReady", es)
	}
}

// Writes of other kinds are dropped without an error, and recorded
// nowhere.
func TestClientDropsOtherKinds(t *testing.T) {
	f := newFixture(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "v"}}
	if err := f.dry.Create(f.ctx, cm); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	if err := f.dry.Update(f.ctx, cm); err != nil {
		t.Fatalf("update configmap: %v", err)
	}
	if err := f.dry.Delete(f.ctx, cm); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	err := f.cluster.Get(f.ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get configmap from the cluster: %v, want not found", err)
	}
	// Reading through the dry run reads the cluster.
	if err := f.dry.Get(f.ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("get configmap through the dry run: %v, want not found", err)
	}
	if es, changed := f.s.Record.Episodes(true); len(es) != 0 || changed {
		t.Errorf("Record = %+v, changed %v; want nothing recorded", es, changed)
	}
	if n := nudged(f.s); len(n) != 0 {
		t.Errorf("nudged %v, want none", n)
	}
	f.assertClusterUnchanged(t)
}

// The dry-run client answers the questions about kinds as the client it
// reads through does.
func TestClientDelegatesTypeQuestions(t *testing.T) {
	f := newFixture(t)
	if f.dry.Scheme() != f.cluster.Scheme() || f.dry.RESTMapper() != f.cluster.RESTMapper() {
		t.Error("Scheme or RESTMapper differ from the cluster client's")
	}
	gvk, err := f.dry.GroupVersionKindFor(&corev1.Node{})
	if err != nil || gvk.Kind != "Node" {
		t.Errorf("GroupVersionKindFor(Node) = %v, %v", gvk, err)
	}
	// The fake cluster's REST mapper knows no kinds: the answer, error
	// included, is to be its own.
	got, gotErr := f.dry.IsObjectNamespaced(&corev1.Pod{})
	want, wantErr := f.cluster.IsObjectNamespaced(&corev1.Pod{})
	if got != want || (gotErr == nil) != (wantErr == nil) {
		t.Errorf("IsObjectNamespaced(Pod) = %v, %v; want the cluster client's %v, %v", got, gotErr, want, wantErr)
	}
	// The reader sees through the view as the client does.
	r := f.s.Reader(f.cluster)
	if err := nodeMarkPatch(t, f); err != nil {
		t.Fatalf("status patch: %v", err)
	}
	node := &corev1.Node{}
	if err := r.Get(f.ctx, client.ObjectKey{Name: "n1"}, node); err != nil {
		t.Fatalf("get through the reader: %v", err)
	}
	if c := conditionOf(t, node, corev1.NodeReady); c.Status != corev1.ConditionUnknown {
		t.Errorf("Ready read through Reader = %s, want Unknown", c.Status)
	}
}
