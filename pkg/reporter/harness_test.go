package reporter

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// t0 is when every test starts, on the fake clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const testNode = "node-a"

var (
	nodesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")
)

// harness runs one Reporter against a fake clientset and a fake clock.
type harness struct {
	t        *testing.T
	clk      *clocktesting.FakeClock
	cs       *fake.Clientset
	r        *Reporter
	failures atomic.Int32
	uids     atomic.Int32
	cancel   context.CancelFunc
	done     chan error
	// blind says whether the reporter's watch is kept from seeing the Node;
	// watches counts the watches it started.
	blind   bool
	watches atomic.Int32

	logMu sync.Mutex
	logs  []string
}

// newHarness builds a reporter of testNode with cfg, over a clientset
// holding objs. The reporter has no jitter, so that its schedule is exact.
func newHarness(t *testing.T, cfg Config, objs ...k8sruntime.Object) *harness {
	t.Helper()
	h := &harness{t: t, clk: clocktesting.NewFakeClock(t0), cs: fake.NewClientset(objs...)}
	// The fake clientset assigns no UIDs; the owner reference of the Lease
	// needs one.
	h.cs.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if node, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Node); ok && node.UID == "" {
			node.UID = types.UID(fmt.Sprintf("uid-%d", h.uids.Add(1)))
		}
		return false, nil, nil
	})
	// The fake watch ignores the resourceVersion it is asked to start from,
	// and would miss what is written between the list and the watch: it is
	// started at the list instead. Both reactors run under the clientset's
	// lock.
	var listed watch.Interface
	h.cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		w, err := h.cs.Tracker().Watch(a.GetResource(), a.GetNamespace())
		listed = w
		return err != nil, nil, err
	})
	h.cs.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w := listed
		listed = nil
		if w == nil {
			var err error
			if w, err = h.cs.Tracker().Watch(a.GetResource(), a.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		h.watches.Add(1)
		return true, w, nil
	})
	if cfg.NodeName == "" {
		cfg.NodeName = testNode
	}
	cfg.OnRepeatedFailure = func() { h.failures.Add(1) }
	r, err := New(h.cs, h.clk, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.random = func() float64 { return 0 }
	h.r = r
	return h
}

// start runs the reporter until the test ends, keeping what it logs.
func (h *harness) start() {
	log := funcr.New(func(_, args string) {
		h.logMu.Lock()
		defer h.logMu.Unlock()
		h.logs = append(h.logs, args)
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), log))
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.r.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

// stop ends Run and checks that it returns nil promptly.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Errorf("Run did not return after its context ended")
	}
}

// settle waits until exactly n goroutines wait on the fake clock, and the
// reporter's watch shows the Node as the clientset holds it, unless it is
// blind: the reporter is then idle until the clock moves, and its next sync
// reads the Node as it is, as a sync 10s after a write does on a live watch.
func (h *harness) settle(n int) {
	h.t.Helper()
	settle(h.t, h.clk, n)
	if h.blind {
		return
	}
	err := wait.PollUntilContextTimeout(h.t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		held, err := h.cs.Tracker().Get(nodesGVR, "", testNode)
		if err != nil {
			return h.r.watchedNode() == nil, nil
		}
		// The fake watch sends only what follows it: the reporter's must
		// have started before the test writes the Node.
		watched := h.r.watchedNode()
		return h.watches.Load() > 0 && watched != nil && equality.Semantic.DeepEqual(held, watched), nil
	})
	if err != nil {
		h.t.Fatalf("the reporter's watch never caught up with the Node: %v", err)
	}
}

// settle waits until exactly n goroutines wait on clk.
func settle(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for clk.Waiters() != n {
		select {
		case <-timeout:
			t.Fatalf("clock has %d waiters, want %d", clk.Waiters(), n)
		default:
			runtime.Gosched()
		}
	}
}

// step moves the clock by d and waits until n goroutines wait on it again.
func (h *harness) step(d time.Duration, n int) {
	h.t.Helper()
	h.clk.Step(d)
	h.settle(n)
}

// logged counts the lines logged so far that contain every one of parts.
func (h *harness) logged(parts ...string) int {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	n := 0
	for _, line := range h.logs {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			n++
		}
	}
	return n
}

// call is an API call the reporter made, in short form.
type call struct {
	verb, resource, subresource string
}

// calls returns the calls made since the last reset, and resets. The list
// and watch of the reporter's watch of its Node are left out: they run
// beside the loops, in an order of their own.
func (h *harness) calls() []call {
	var out []call
	for _, a := range h.cs.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, call{verb: a.GetVerb(), resource: a.GetResource().Resource, subresource: a.GetSubresource()})
	}
	h.cs.ClearActions()
	return out
}

// count counts the calls with verb on resource, subresource included.
func count(calls []call, verb, resource string) int {
	n := 0
	for _, c := range calls {
		if c.verb == verb && c.resource == resource {
			n++
		}
	}
	return n
}

// writes keeps the calls that write.
func writes(calls []call) []call {
	return slices.DeleteFunc(slices.Clone(calls), func(c call) bool {
		return c.verb == "get" || c.verb == "list" || c.verb == "watch"
	})
}

func (h *harness) node() *corev1.Node {
	h.t.Helper()
	obj, err := h.cs.Tracker().Get(nodesGVR, "", testNode)
	if err != nil {
		h.t.Fatalf("get node: %v", err)
	}
	return obj.(*corev1.Node)
}

func (h *harness) lease() *coordinationv1.Lease {
	h.t.Helper()
	obj, err := h.cs.Tracker().Get(leasesGVR, corev1.NamespaceNodeLease, testNode)
	if err != nil {
		h.t.Fatalf("get lease: %v", err)
	}
	return obj.(*coordinationv1.Lease)
}

// failN makes the next n calls of verb on resource fail with err.
func (h *harness) failN(verb, resource string, n int, err error) {
	var left atomic.Int32
	left.Store(int32(n))
	prependReactor(h.cs, verb, resource, func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if left.Add(-1) >= 0 {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// prependReactor puts react first in the reactors of cs, under the lock
// that cs holds while it calls them: the reporter's watch may be listing
// meanwhile.
func prependReactor(cs *fake.Clientset, verb, resource string, react k8stesting.ReactionFunc) {
	cs.Lock()
	defer cs.Unlock()
	cs.PrependReactor(verb, resource, react)
}

// blindWatch makes the reporter's watch of its Node see nothing, as one
// not yet answered: the status syncs then read the Node themselves.
func (h *harness) blindWatch() {
	h.blind = true
	prependReactor(h.cs, "list", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, &corev1.NodeList{}, nil
	})
	h.cs.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
}

// watched waits until the reporter's watch shows it a Node of which ok
// holds.
func (h *harness) watched(ok func(*corev1.Node) bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		node := h.r.watchedNode()
		return node != nil && ok(node), nil
	})
	if err != nil {
		h.t.Fatalf("the reporter's watch never showed the Node as wanted: %v", err)
	}
}

// existingNode is a Node registered earlier, whose status the controller
// has since marked Unknown.
func existingNode() *corev1.Node {
	old := metav1.NewTime(t0.Add(-time.Hour))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "uid-existing"},
		Status: corev1.NodeStatus{
			Capacity: DefaultCapacity(),
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
				LastHeartbeatTime: old, LastTransitionTime: old,
			}},
		},
	}
}

func condition(node *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// ownedLease is the Lease of existingNode, renewed long ago.
func ownedLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: testNode, Namespace: corev1.NamespaceNodeLease,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: testNode, UID: "uid-existing"}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(testNode),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{Time: t0.Add(-time.Hour)},
		},
	}
}
