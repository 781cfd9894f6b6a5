package e2e

import (
	"context"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// inZone labels a node with a region and zone.
func inZone(node, zone string) {
	Eventually(func() error {
		n := getNode(node)
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[corev1.LabelTopologyRegion] = "test"
		n.Labels[corev1.LabelTopologyZone] = zone
		return k8s.Update(context.Background(), n)
	}).Should(Succeed())
}

// zoneOf creates n nodes in a zone, each renewing its Lease until its stop
// function is called.
func zoneOf(zone string, n int) (names []string, stops []func() time.Time) {
	for range n {
		name, stop := failingNode()
		inZone(name, zone)
		names = append(names, name)
		stops = append(stops, stop)
	}
	return names, stops
}

// stopAll stops heartbeats together.
func stopAll(stops []func() time.Time) {
	var wg sync.WaitGroup
	for _, s := range stops {
		wg.Add(1)
		go func() { defer wg.Done(); s() }()
	}
	wg.Wait()
}

func hasNoExecuteTaint(node string) bool {
	for _, t := range getNode(node).Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// taintTimes watches the nodes until each carries a NoExecute taint and
// returns, sorted, when the suite first saw each one.
func taintTimes(nodes []string, timeout time.Duration) []time.Time {
	seen := map[string]time.Time{}
	Eventually(func() int {
		for _, n := range nodes {
			if _, ok := seen[n]; !ok && hasNoExecuteTaint(n) {
				seen[n] = time.Now()
			}
		}
		return len(seen)
	}).WithTimeout(timeout).WithPolling(10 * time.Millisecond).Should(Equal(len(nodes)))
	var times []time.Time
	for _, t := range seen {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times
}

func gaps(times []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(times); i++ {
		out = append(out, times[i].Sub(times[i-1]).Round(time.Millisecond))
	}
	return out
}

func freezeOff(o *options.Options) { o.PartitionFreezeThreshold = 0 }

var _ = Describe("Disruption guard", func() {
	It("taints a fully disrupted zone at the normal rate beside a healthy zone", func() {
		startController(freezeOff)
		down, stops := zoneOf("a", 4)
		healthy, _ := zoneOf("b", 2)

		stopAll(stops)
		times := taintTimes(down, grace+10*time.Second)
		GinkgoWriter.Printf("NoExecute taint spacing at %v nodes/s: %v\n", evictionRate, gaps(times))
		// The bucket holds one token: the first goes at once, the rest one
		// interval apart (less what polling and watch delay can blur).
		interval := time.Second / evictionRate
		Expect(times[len(times)-1].Sub(times[0])).To(BeNumerically(">=", 3*interval-200*time.Millisecond))
		for _, n := range healthy {
			Expect(hasNoExecuteTaint(n)).To(BeFalse())
		}
	})

	It("taints a large partially disrupted zone at the secondary rate", Label("compat"), func() {
		startController(freezeOff, func(o *options.Options) {
			o.SecondaryNodeEvictionRate = 0.5
			o.LargeClusterSizeThreshold = 3
		})
		nodes, stops := zoneOf("a", 5)
		stopAll(stops[:4])
		times := taintTimes(nodes[:4], grace+15*time.Second)
		GinkgoWriter.Printf("NoExecute taint spacing in a partially disrupted zone at 0.5 nodes/s: %v\n", gaps(times))
		// At most the first two go at the normal rate, before the zone
		// counts as partially disrupted; the others wait two seconds each.
		Expect(times[3].Sub(times[1])).To(BeNumerically(">=", 4*time.Second-200*time.Millisecond))
	})

	It("adds no NoExecute taint and evicts nothing while every zone is down, then resumes", func() {
		startController(freezeOff)
		a, stopA := zoneOf("a", 1)
		b, stopB := zoneOf("b", 1)
		podB := createPod(b[0]+"-p", b[0], tolerateUnreachable(ptr.To[int64](0)))

		By("one zone down beside a healthy one: tainted")
		stopAll(stopA)
		taintTimes(a, grace+5*time.Second)

		By("every zone down: the taint goes, nothing new is tainted, nothing is evicted")
		stopAll(stopB)
		Eventually(readyStatus(b[0])).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(func() bool { return hasNoExecuteTaint(a[0]) }).Should(BeFalse())
		Consistently(func() bool { return hasNoExecuteTaint(b[0]) }).WithTimeout(2 * time.Second).Should(BeFalse())
		Expect(deleted(podB)(Default)).To(BeFalse())

		By("a zone back: the nodes still down are tainted again")
		postReady(b[0], corev1.ConditionTrue)
		leaseBeats(b[0])
		taintTimes(a, grace+5*time.Second)
		Expect(deleted(podB)(Default)).To(BeFalse())
	})

	It("freezes destructive work when most heartbeats are lost at once, and thaws after the cooldown", Label("compat"), func() {
		startController()
		a, stopA := zoneOf("a", 3)
		b, stopB := zoneOf("b", 2)
		var pods []*corev1.Pod
		for _, n := range append(append([]string{}, a...), b[0]) {
			pods = append(pods, createPod(n+"-p", n, tolerateUnreachable(ptr.To[int64](0))))
		}

		By("four of five nodes going silent together")
		stopAll(append(stopA, stopB[0]))
		for _, n := range append(append([]string{}, a...), b[0]) {
			Eventually(readyStatus(n)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		}
		Eventually(eventReasonsOn(corev1.NamespaceNodeLease)).Should(ContainElement("PartitionFreeze"))
		Consistently(func() bool {
			for _, p := range pods {
				if deleted(p)(Default) || podReadyStatus(p)(Default) != corev1.ConditionTrue {
					return true
				}
			}
			for _, n := range a {
				if hasNoExecuteTaint(n) {
					return true
				}
			}
			return false
		}).WithTimeout(2*time.Second).Should(BeFalse(), "no NoExecute taint, no NotReady pod, no eviction while frozen")

		By("the nodes coming back, then the cooldown passing")
		for _, n := range append(append([]string{}, a...), b[0]) {
			postReady(n, corev1.ConditionTrue)
			leaseBeats(n)
		}
		Eventually(eventReasonsOn(corev1.NamespaceNodeLease)).WithTimeout(grace + 5*time.Second).
			Should(ContainElement("PartitionFreezeEnded"))
		for _, p := range pods {
			Expect(deleted(p)(Default)).To(BeFalse())
		}
	})
})
