package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestChurnSchedule(t *testing.T) {
	tests := []struct {
		name           string
		nodes, perNode int
		every          time.Duration
		wantGap        time.Duration
	}{
		{name: "one node, one pod", nodes: 1, perNode: 1, every: time.Minute, wantGap: time.Minute},
		{name: "one node, its pods in turn", nodes: 1, perNode: 4, every: time.Minute, wantGap: 15 * time.Second},
		{name: "nodes interleaved", nodes: 4, perNode: 3, every: 12 * time.Second, wantGap: time.Second},
		{name: "the bench's default", nodes: 1000, perNode: 30, every: 5 * time.Minute, wantGap: 10 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Over one interval from the start, each node's slots write
			// each of its pods once; all together they must come evenly.
			type write struct {
				at       time.Duration
				node, of int
			}
			var writes []write
			for i := range tc.nodes {
				offset, period := churnSchedule(i, tc.nodes, tc.perNode, tc.every)
				if offset < 0 || offset >= period {
					t.Fatalf("node %d: offset %v outside its first period %v", i, offset, period)
				}
				for k := range tc.perNode {
					writes = append(writes, write{at: offset + time.Duration(k)*period, node: i, of: k})
				}
			}
			slices.SortFunc(writes, func(a, b write) int { return int(a.at - b.at) })
			for j, w := range writes {
				if w.at >= tc.every {
					t.Fatalf("write of node %d pod %d at %v, after the interval %v", w.node, w.of, w.at, tc.every)
				}
				if want := time.Duration(j) * tc.wantGap; w.at != want {
					t.Fatalf("write %d (node %d pod %d) at %v, want %v", j, w.node, w.of, w.at, want)
				}
			}
		})
	}
}

func TestRestartPatch(t *testing.T) {
	g := NewWithT(t)
	patch, err := restartPatch("p", 3, t0, t0.Add(time.Minute))
	g.Expect(err).NotTo(HaveOccurred())
	var got struct {
		Status corev1.PodStatus `json:"status"`
	}
	g.Expect(json.Unmarshal(patch, &got)).To(Succeed())
	var fields map[string]map[string]json.RawMessage
	g.Expect(json.Unmarshal(patch, &fields)).To(Succeed())
	g.Expect(fields["status"]).To(HaveLen(1), "the patch writes the container statuses alone: %s", patch)

	g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
	cs := got.Status.ContainerStatuses[0]
	g.Expect(cs.Name).To(Equal(podContainer))
	g.Expect(cs.RestartCount).To(BeEquivalentTo(3))
	g.Expect(cs.Ready).To(BeTrue(), "a restart reported must not change readiness")
	g.Expect(cs.Started).To(HaveValue(BeTrue()))
	g.Expect(cs.State.Running).NotTo(BeNil())
	g.Expect(cs.State.Running.StartedAt.Time).To(BeTemporally("==", t0.Add(time.Minute)))
	last := cs.LastTerminationState.Terminated
	g.Expect(last).NotTo(BeNil())
	g.Expect(last.StartedAt.Time).To(BeTemporally("==", t0))
	g.Expect(last.FinishedAt.Time).To(BeTemporally("==", t0.Add(time.Minute)))
	g.Expect(last.ContainerID).NotTo(Equal(cs.ContainerID), "each run of a container has an ID of its own")
	g.Expect(last.ContainerID).To(Equal(containerStatus("p", 2, t0, nil).ContainerID), "the last run is the one reported before")
}

// churnHarness runs one node's podChurn on a fake clock against a fake
// clientset, and records the patches it sends.
type churnHarness struct {
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	churn  *podChurn
	counts *writeCounts
	paused atomic.Bool
	// failing makes every patch fail.
	failing atomic.Bool

	mu      sync.Mutex
	patched []string
}

const churnPeriod = 10 * time.Second

func startChurn(t *testing.T, pods ...string) *churnHarness {
	t.Helper()
	created := t0.Add(-time.Hour)
	var objs []runtime.Object
	for _, name := range pods {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Status:     runningStatus(name, created),
		})
	}
	h := &churnHarness{client: fake.NewClientset(objs...), clock: clocktesting.NewFakeClock(t0), counts: &writeCounts{}}
	h.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.patched = append(h.patched, a.(k8stesting.PatchAction).GetName())
		if a.GetSubresource() != "status" {
			t.Errorf("patch of %q, want the status", a.GetSubresource())
		}
		if h.failing.Load() {
			return true, nil, errors.New("apiserver unavailable")
		}
		return false, nil, nil
	})
	h.churn = newPodChurn(h.client, "ns", h.clock, pods, created, t0, churnPeriod, h.paused.Load, h.counts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.churn.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// settled waits until the churn waits for its next slot: every write of
// the slots due is done.
func (h *churnHarness) settled(g Gomega) {
	g.Eventually(h.clock.Waiters).Should(Equal(1))
}

// step moves the clock on by d and waits until the churn has written what
// was due.
func (h *churnHarness) step(g Gomega, d time.Duration) {
	h.clock.Step(d)
	h.settled(g)
}

func (h *churnHarness) patches() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.patched)
}

func (h *churnHarness) container(g Gomega, name string) corev1.ContainerStatus {
	pod, err := h.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
	return pod.Status.ContainerStatuses[0]
}

func TestPodChurnWritesEachPodInTurn(t *testing.T) {
	g := NewWithT(t)
	h := startChurn(t, "a", "b", "c")

	h.settled(g)
	g.Expect(h.patches()).To(Equal([]string{"a"}), "slot 0 is due at the start")
	h.step(g, churnPeriod/2)
	g.Expect(h.patches()).To(Equal([]string{"a"}), "a write before its slot")
	h.step(g, churnPeriod/2)
	h.step(g, churnPeriod)
	h.step(g, churnPeriod)
	g.Expect(h.patches()).To(Equal([]string{"a", "b", "c", "a"}))
	g.Expect(h.counts.snapshot()).To(Equal(PodStatusWrites{Written: 4}))

	a := h.container(g, "a")
	g.Expect(a.RestartCount).To(BeEquivalentTo(2))
	g.Expect(a.Ready).To(BeTrue())
	g.Expect(a.State.Running.StartedAt.Time).To(BeTemporally("==", t0.Add(3*churnPeriod)))
	g.Expect(a.LastTerminationState.Terminated.StartedAt.Time).To(BeTemporally("==", t0), "the last run started at the first restart")
	g.Expect(h.container(g, "b").RestartCount).To(BeEquivalentTo(1))
}

func TestPodChurnPausedWritesNothing(t *testing.T) {
	g := NewWithT(t)
	h := startChurn(t, "a", "b")
	h.settled(g)

	h.paused.Store(true)
	h.step(g, churnPeriod)
	h.step(g, churnPeriod)
	g.Expect(h.patches()).To(Equal([]string{"a"}), "a paused node's pods written")

	h.paused.Store(false)
	h.step(g, churnPeriod)
	g.Expect(h.patches()).To(Equal([]string{"a", "b"}), "writes resume in the slot's turn")
	g.Expect(h.container(g, "b").RestartCount).To(BeEquivalentTo(1))
}

func TestPodChurnSkipsMissedSlots(t *testing.T) {
	g := NewWithT(t)
	h := startChurn(t, "a", "b", "c")
	h.settled(g)

	// The clock jumps three and a half periods, as when writes stall: one
	// write, of the latest slot due (3, pod a), not a burst of four.
	h.step(g, 3*churnPeriod+churnPeriod/2)
	g.Expect(h.patches()).To(Equal([]string{"a", "a"}))
	// The next slot keeps to the schedule: half a period later.
	h.step(g, churnPeriod/2)
	g.Expect(h.patches()).To(Equal([]string{"a", "a", "b"}))
}

func TestPodChurnDeletedAndFailed(t *testing.T) {
	g := NewWithT(t)
	h := startChurn(t, "a", "b")
	h.settled(g)

	g.Expect(h.client.CoreV1().Pods("ns").Delete(context.Background(), "b", metav1.DeleteOptions{})).To(Succeed())
	h.step(g, churnPeriod)
	h.step(g, churnPeriod)
	h.step(g, churnPeriod)
	g.Expect(h.patches()).To(Equal([]string{"a", "b", "a"}), "a deleted pod is written once more, to find it gone")
	g.Expect(h.counts.snapshot()).To(Equal(PodStatusWrites{Written: 2}))

	h.failing.Store(true)
	h.step(g, churnPeriod)
	g.Expect(h.counts.snapshot()).To(Equal(PodStatusWrites{Written: 2, Failed: 1}))
	h.failing.Store(false)
	h.step(g, churnPeriod)
	h.step(g, churnPeriod)
	g.Expect(h.counts.snapshot()).To(Equal(PodStatusWrites{Written: 3, Failed: 1}))
	g.Expect(h.container(g, "a").RestartCount).To(BeEquivalentTo(3), "a failed write is not counted as a restart")
}
