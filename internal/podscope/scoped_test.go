package podscope

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// env is a control plane, a client of it, a started Node cache and a
// started Scoped whose sweeps a fake clock drives.
type env struct {
	c     client.Client
	s     *Scoped
	clock *clocktesting.FakeClock
	q     queue
}

// testLimit and testLinger are the node limit and the linger of the
// Scoped under test.
const (
	testLimit  = 2
	testLinger = time.Minute
)

func start(t *testing.T) *env {
	t.Helper()
	return startWith(t, func(*Scoped) {})
}

// startWith is start with set applied to the Scoped before it starts.
func startWith(t *testing.T, set func(*Scoped)) *env {
	t.Helper()
	_, cfg := testenv.Start(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nodes, err := cache.New(cfg, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = nodes.Start(ctx) }()
	clk := clocktesting.NewFakeClock(time.Now())
	s, err := NewScoped(cfg, nodes, testLimit, testLinger, clk)
	if err != nil {
		t.Fatal(err)
	}
	set(s)
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	// Creations and deletions pass; updates only when the pod turns Ready.
	src := s.Source(predicate.TypedFuncs[*corev1.Pod]{UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Pod]) bool {
		return ready(e.ObjectNew) && !ready(e.ObjectOld)
	}})
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	return &env{c: c, s: s, clock: clk, q: q}
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *env) node(t *testing.T, name string, status corev1.ConditionStatus) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	e.setReady(t, name, status)
}

func (e *env) setReady(t *testing.T, name string, status corev1.ConditionStatus) {
	t.Helper()
	n := &corev1.Node{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := e.c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func (e *env) pod(t *testing.T, name, node string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if err := e.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// names returns the names of the node's pods once they are listed.
func (e *env) names(g Gomega, node string) []string {
	pods, err := e.s.On(context.Background(), node)
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// queued drains the queue and returns the node names it held.
func (e *env) queued() []string {
	var out []string
	for e.q.Len() > 0 {
		r, _ := e.q.Get()
		out = append(out, r.Name)
		e.q.Done(r)
		e.q.Forget(r)
	}
	slices.Sort(out)
	return out
}

// sweep moves the clock on by the linger, once Start's ticker is waiting.
func (e *env) sweep(g Gomega) {
	g.Eventually(e.clock.HasWaiters).Should(BeTrue())
	e.clock.Step(testLinger)
}

func watches(scope string) float64 { return testutil.ToFloat64(podWatches.WithLabelValues(scope)) }

func TestScopedWatchesOnlyThePodsOfNodesInTrouble(t *testing.T) {
	g := NewWithT(t)
	e := start(t)
	e.node(t, "healthy", corev1.ConditionTrue)
	e.pod(t, "h1", "healthy")
	e.node(t, "sick", corev1.ConditionTrue)
	e.pod(t, "s1", "sick")
	e.pod(t, "s2", "sick")

	// A node Ready has no watch: its pods are neither listed nor heard.
	g.Consistently(func() float64 { return watches(scopeNode) }, time.Second, 100*time.Millisecond).Should(BeZero())
	g.Expect(e.queued()).To(BeEmpty())

	// Not Ready, its pods are listed, and it is queued once they are.
	e.setReady(t, "sick", corev1.ConditionUnknown)
	g.Eventually(func(g Gomega) []string { return e.names(g, "sick") }).Should(Equal([]string{"s1", "s2"}))
	g.Eventually(e.queued).Should(ContainElement("sick"))
	g.Expect(watches(scopeNode)).To(Equal(1.0))
	g.Expect(watches(scopeCluster)).To(BeZero())

	// A new pod there is heard; one on the healthy node is not.
	e.pod(t, "s3", "sick")
	e.pod(t, "h2", "healthy")
	g.Eventually(e.queued).Should(Equal([]string{"sick"}))
	g.Consistently(e.queued, time.Second, 100*time.Millisecond).Should(BeEmpty())
	g.Eventually(func(g Gomega) []string { return e.names(g, "sick") }).Should(Equal([]string{"s1", "s2", "s3"}))

	// On returns copies: changing them changes nothing the next caller sees.
	pods, err := e.s.On(context.Background(), "sick")
	g.Expect(err).NotTo(HaveOccurred())
	pods[0].Name = "changed"
	g.Expect(e.names(g, "sick")).To(Equal([]string{"s1", "s2", "s3"}))

	// Ready again, the watch stops once On's reads are a linger old.
	e.setReady(t, "sick", corev1.ConditionTrue)
	e.sweep(g)
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(BeZero())
}

func TestScopedAnswersNothingBeforeItHasListed(t *testing.T) {
	g := NewWithT(t)
	e := start(t)
	e.node(t, "n", corev1.ConditionTrue)
	e.pod(t, "p", "n")
	// Asked for a node it does not watch, it watches it, and says so
	// rather than answer "no pods".
	_, err := e.s.On(context.Background(), "n")
	g.Expect(errors.Is(err, ErrNotListed)).To(BeTrue(), "%v", err)
	g.Eventually(func(g Gomega) []string { return e.names(g, "n") }).Should(Equal([]string{"p"}))
	g.Eventually(e.queued).Should(ContainElement("n"))

	// Nothing about the node needs its pods: after a linger the sweep drops
	// the watch.
	g.Expect(watches(scopeNode)).To(Equal(1.0))
	e.sweep(g)
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(BeZero())
}

func TestScopedListsThenWatchesWithoutStreaming(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	var lists, watchCalls []metav1.ListOptions
	e := startWith(t, func(s *Scoped) {
		made := s.listers
		s.listers = func(sel string) *toolscache.ListWatch {
			lw := made(sel)
			seen := *lw
			seen.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
				mu.Lock()
				lists = append(lists, o)
				mu.Unlock()
				return lw.ListWithContextFunc(ctx, o)
			}
			seen.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
				mu.Lock()
				watchCalls = append(watchCalls, o)
				mu.Unlock()
				return lw.WatchFuncWithContext(ctx, o)
			}
			return &seen
		}
	})
	e.node(t, "n", corev1.ConditionUnknown)
	e.pod(t, "p", "n")
	g.Eventually(func(g Gomega) []string { return e.names(g, "n") }).Should(Equal([]string{"p"}))

	// The pods were listed from the watch cache as it stood, then watched
	// from there: no watch asked for its list streamed, which waits on the
	// cache reaching etcd's latest revision.
	mu.Lock()
	defer mu.Unlock()
	g.Expect(lists).NotTo(BeEmpty())
	g.Expect(lists[0].ResourceVersion).To(Equal("0"))
	for _, o := range watchCalls {
		g.Expect(o.SendInitialEvents).To(BeNil(), "watch %+v", o)
	}
}

func TestScopedExpectedNodeKeepsItsWatchForItsLinger(t *testing.T) {
	g := NewWithT(t)
	e := start(t)
	e.node(t, "n", corev1.ConditionTrue)
	e.s.Expect("n")
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(Equal(1.0))
	// A Node event within the linger that says the node is fine keeps it: the
	// mark it was expected for may not be seen yet.
	e.setReady(t, "n", corev1.ConditionTrue)
	g.Consistently(func() float64 { return watches(scopeNode) }, time.Second, 100*time.Millisecond).Should(Equal(1.0))
	e.sweep(g)
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(BeZero())
}

func TestScopedWatchesEveryPodAboveItsLimitAndNarrowsAtHalf(t *testing.T) {
	g := NewWithT(t)
	e := start(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		e.node(t, n, corev1.ConditionTrue)
		e.pod(t, n+"1", n)
	}
	e.setReady(t, "a", corev1.ConditionFalse)
	e.setReady(t, "b", corev1.ConditionFalse)
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(Equal(2.0))

	// A third: one watch of every pod replaces the watches of one node's.
	e.setReady(t, "c", corev1.ConditionFalse)
	g.Eventually(func() float64 { return watches(scopeCluster) }).Should(Equal(1.0))
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(BeZero())
	for _, n := range []string{"a", "b", "c"} {
		g.Expect(e.names(g, n)).To(Equal([]string{n + "1"}))
	}
	// On's reads keep a node watched for the linger; let them age.
	e.sweep(g)
	e.queued()
	// Pods of nodes in trouble are heard, others' are not.
	e.pod(t, "c2", "c")
	e.pod(t, "d2", "d")
	g.Eventually(e.queued).Should(Equal([]string{"c"}))
	g.Consistently(e.queued, time.Second, 100*time.Millisecond).Should(BeEmpty())

	// Down to two, still above half the limit: every pod stays watched.
	e.setReady(t, "c", corev1.ConditionTrue)
	g.Consistently(func() float64 { return watches(scopeCluster) }, time.Second, 100*time.Millisecond).Should(Equal(1.0))
	// Down to one: its own watch again, and the wide one stops once it has
	// listed.
	e.setReady(t, "b", corev1.ConditionTrue)
	g.Eventually(func() float64 { return watches(scopeCluster) }).Should(BeZero())
	g.Expect(watches(scopeNode)).To(Equal(1.0))
	g.Expect(e.names(g, "a")).To(Equal([]string{"a1"}))
}

// A standby never watches every pod, and watches the pods of no more nodes
// than its limit: the failure the wide watch is for must not take every
// replica's memory up at once. Once it leads, it does as a leader does.
func TestScopedStandbyWatchesNoMoreThanItsLimit(t *testing.T) {
	g := NewWithT(t)
	elected := make(chan struct{})
	e := startWith(t, func(s *Scoped) { s.Leading(elected) })
	for _, n := range []string{"a", "b", "c"} {
		e.node(t, n, corev1.ConditionTrue)
		e.pod(t, n+"1", n)
	}
	for _, n := range []string{"a", "b", "c"} {
		e.setReady(t, n, corev1.ConditionFalse)
	}
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(Equal(float64(testLimit)))
	g.Consistently(func() float64 { return watches(scopeCluster) }, time.Second, 100*time.Millisecond).Should(BeZero())
	g.Expect(watches(scopeNode)).To(Equal(float64(testLimit)))

	close(elected)
	g.Eventually(func() float64 { return watches(scopeCluster) }).Should(Equal(1.0))
	for _, n := range []string{"a", "b", "c"} {
		g.Eventually(func(g Gomega) []string { return e.names(g, n) }).Should(Equal([]string{n + "1"}))
	}
}

func TestScopedStopsWatchingADeletedNode(t *testing.T) {
	g := NewWithT(t)
	e := start(t)
	e.node(t, "n", corev1.ConditionFalse)
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(Equal(1.0))
	g.Expect(e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})).To(Succeed())
	g.Eventually(func() float64 { return watches(scopeNode) }).Should(BeZero())
}

func TestNeeds(t *testing.T) {
	cond := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}, {Type: corev1.NodeReady, Status: s}}
	}
	for _, tc := range []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"no conditions yet", corev1.Node{}, false},
		{"ready", corev1.Node{Status: corev1.NodeStatus{Conditions: cond(corev1.ConditionTrue)}}, false},
		{"not ready", corev1.Node{Status: corev1.NodeStatus{Conditions: cond(corev1.ConditionFalse)}}, true},
		{"unknown", corev1.Node{Status: corev1.NodeStatus{Conditions: cond(corev1.ConditionUnknown)}}, true},
		{"ready, NoSchedule taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: cond(corev1.ConditionTrue)}}, false},
		{"ready, any NoExecute taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}},
			Status: corev1.NodeStatus{Conditions: cond(corev1.ConditionTrue)}}, true},
	} {
		if got := Needs(&tc.node); got != tc.want {
			t.Errorf("%s: Needs = %v, want %v", tc.name, got, tc.want)
		}
	}
}
