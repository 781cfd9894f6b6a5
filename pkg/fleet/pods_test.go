package fleet

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// podWrites records, from a watch, when each pod was seen written.
type podWrites struct {
	mu   sync.Mutex
	seen map[string][]time.Time
	last map[string]*corev1.Pod
}

func watchPodWrites(t *testing.T, client kubernetes.Interface, namespace string) *podWrites {
	t.Helper()
	ctx := t.Context()
	pods := client.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: PodLabel})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: PodLabel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch pods: %v", err)
	}
	p := &podWrites{seen: map[string][]time.Time{}, last: map[string]*corev1.Pod{}}
	for i := range list.Items {
		p.last[list.Items[i].Name] = &list.Items[i]
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Modified || !ok {
				continue
			}
			p.mu.Lock()
			p.seen[pod.Name] = append(p.seen[pod.Name], time.Now())
			p.last[pod.Name] = pod
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return p
}

// counts returns how many writes each pod has had.
func (p *podWrites) counts(pods []string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(pods))
	for _, n := range pods {
		out[n] = len(p.seen[n])
	}
	return out
}

// at returns when a pod's writes were seen.
func (p *podWrites) at(pod string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.seen[pod]...)
}

// eachGained returns a matcher-ready func: whether every pod has had at
// least n writes more than in since.
func (p *podWrites) eachGained(pods []string, since map[string]int, n int) func() []string {
	return func() []string {
		var behind []string
		now := p.counts(pods)
		for _, pod := range pods {
			if now[pod] < since[pod]+n {
				behind = append(behind, pod)
			}
		}
		return behind
	}
}

func podsOf(f *Fleet, nodes ...string) []string {
	var out []string
	for _, n := range nodes {
		for i := range f.opts.PodsPerNode {
			out = append(out, podName(n, i))
		}
	}
	return out
}

// TestPodStatusChurn runs a small fleet whose pods' statuses change every
// few seconds on a real control plane: each pod is written about once per
// interval, stays Ready, and a stopped node's pods are left alone until it
// resumes.
func TestPodStatusChurn(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := t.Context()
	_, cfg := testenv.Start(t)

	const every = 3 * time.Second
	f, err := Start(ctx, cfg, Options{
		Nodes: 3, PodsPerNode: 3, PodStatusEvery: every,
		NamePrefix: "churn-", PodNamespace: "churn",
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(f.Close)
	writes := watchPodWrites(t, kubernetes.NewForConfigOrDie(cfg), "churn")
	all := podsOf(f, f.Nodes()...)
	g.Expect(all).To(HaveLen(9))

	// Four writes of each pod span three intervals or more; slack for a
	// busy machine is allowed, up to two intervals between writes.
	g.Eventually(writes.eachGained(all, nil, 4)).Should(BeEmpty(), "pods not written 4 times")
	for _, pod := range all {
		at := writes.at(pod)
		for i := 1; i < len(at); i++ {
			g.Expect(at[i].Sub(at[i-1])).To(BeNumerically("<=", 2*every), "pod %s: writes %d and %d too far apart", pod, i-1, i)
		}
		for i := 3; i < len(at); i++ {
			g.Expect(at[i].Sub(at[i-3])).To(BeNumerically(">", every), "pod %s: more than 3 writes within an interval", pod)
		}
	}

	// Each write is a restart that keeps the pod Ready.
	writes.mu.Lock()
	for _, pod := range all {
		p := writes.last[pod]
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeNumerically(">=", 4), "pod %s", pod)
		g.Expect(p.Status.ContainerStatuses[0].Ready).To(BeTrue(), "pod %s", pod)
		g.Expect(p.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))), "pod %s", pod)
	}
	writes.mu.Unlock()

	stopped, running := f.Nodes()[0], f.Nodes()[1:]
	stoppedPods, runningPods := podsOf(f, stopped), podsOf(f, running...)
	f.Stop(stopped)
	// A write under way at the stop may still land: let every running pod
	// be written once before counting the stopped node's.
	g.Eventually(writes.eachGained(runningPods, writes.counts(runningPods), 1)).Should(BeEmpty())
	before := writes.counts(stoppedPods)
	g.Eventually(writes.eachGained(runningPods, writes.counts(runningPods), 2)).Should(BeEmpty())
	g.Expect(writes.counts(stoppedPods)).To(Equal(before), "a stopped node's pods were written")

	f.Resume(stopped)
	g.Eventually(writes.eachGained(stoppedPods, before, 1)).Should(BeEmpty(), "pods of a resumed node not written")
	g.Expect(f.PodStatusWrites().Failed).To(BeZero())
	g.Expect(f.PodStatusWrites().Written).To(BeNumerically(">=", 9*4))
}
