package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// freezeKept reports whether the kube-node-lease Namespace keeps a
// partition freeze, as the leader writes it for its successor.
func freezeKept(g Gomega) bool {
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns)).To(Succeed())
	_, kept := ns.Annotations[safety.AnnotationFreeze]
	return kept
}

// kubeletPodsAsSeen reads the pods again from the apiserver.
func kubeletPodsAsSeen(pods []*corev1.Pod) func(g Gomega) []corev1.Pod {
	return func(g Gomega) []corev1.Pod {
		out := make([]corev1.Pod, 0, len(pods))
		for _, p := range pods {
			got := &corev1.Pod{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got)).To(Succeed())
			out = append(out, *got)
		}
		return out
	}
}

var _ = Describe("Most real kubelets frozen at once", Label("kubelet"), func() {
	It("freezes: four of five kubelets silent past the grace are marked, but none is tainted NoExecute and no pod is marked NotReady or evicted; resumed, they are Ready and untainted, and the freeze ends a cooldown later", func() {
		zone := "zone-" + newNodeName()
		names := make([]string, 5)
		for i := range names {
			names[i] = newNodeName()
		}
		kubelets := startHollowKubelets(zone, names...)
		live, frozen := kubelets[0], kubelets[1:]
		history := recordNodes(harness.LabelZone + "=" + zone)
		// The zone counts as partially disrupted only when wholly down, so
		// that without the freeze the frozen kubelets would be tainted at
		// the normal rate: the freeze alone must hold them. The threshold
		// is the default, 0.6.
		startController(kubeletTimings, func(o *options.Options) { o.UnhealthyZoneThreshold = 1 })

		// Without the freeze, each would be evicted 2s after its node's
		// NoExecute taint.
		var pods []*corev1.Pod
		for _, k := range frozen {
			pods = append(pods, createKubeletPod(k.Name+"-pod", k.Name, tolerateUnreachable(ptr.To[int64](2)), tolerateNotReady(ptr.To[int64](2))))
		}
		for _, pod := range pods {
			Eventually(podReadyStatus(pod)).WithTimeout(time.Minute).Should(Equal(corev1.ConditionTrue), "pod %s", pod.Name)
		}

		By("freezing four of the five at once")
		frozenAt := time.Now()
		for _, k := range frozen {
			Expect(k.Freeze()).To(Succeed())
		}

		By("the partition freeze holding before the first of them is marked: each marked Unknown and tainted NoSchedule, none NoExecute, no pod marked or evicted")
		Eventually(freezeEventsSince(frozenAt)).WithTimeout(kubeletGrace).Should(ContainElement(nodehealth.ReasonPartitionFreeze))
		for _, k := range frozen {
			Expect(readyStatus(k.Name)(Default)).To(HavePrefix("True/"), "node %s marked before the freeze", k.Name)
		}
		Expect(freezeGauge()).To(Equal(1.0))
		Expect(freezeKept(Default)).To(BeTrue())
		for _, k := range frozen {
			Eventually(readyStatus(k.Name)).WithTimeout(kubeletGrace+harness.KubeletLeaseRenewInterval).Should(Equal(markedUnknown), "node %s", k.Name)
			Eventually(noScheduleTaints(k.Name)).Should(ConsistOf(unreachableTaint), "node %s", k.Name)
		}
		lastMarked := time.Now()
		// Past the pods' tolerations, counted from the last mark.
		Consistently(func(g Gomega) { podsIntact(g, kubeletPodsAsSeen(pods)(g)) }).
			WithTimeout(5 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(readyStatus(live.Name)(Default)).To(HavePrefix("True/"))

		By("resuming them: every node Ready and untainted, every pod there and Ready")
		for _, k := range frozen {
			Expect(k.Resume()).To(Succeed())
		}
		resumed := time.Now()
		Eventually(func(g Gomega) {
			for _, k := range kubelets {
				g.Expect(readyStatus(k.Name)(g)).To(HavePrefix("True/"), "node %s", k.Name)
				g.Expect(getNode(k.Name).Spec.Taints).To(BeEmpty(), "node %s", k.Name)
			}
		}).WithTimeout(harness.KubeletStatusInterval + 5*time.Second).Should(Succeed())
		readyAt := time.Now()
		Expect(freezeGauge()).To(Equal(1.0), "the freeze ended before its cooldown")

		By("the freeze ending a cooldown after they were heard again, and nothing held going then")
		Eventually(freezeEventsSince(resumed)).WithTimeout(kubeletGrace + 5*time.Second).
			Should(ContainElement(nodehealth.ReasonPartitionFreezeEnded))
		ended := time.Now()
		Expect(ended.Sub(resumed)).To(BeNumerically(">=", kubeletGrace-time.Second), "the freeze ended before its cooldown")
		Expect(freezeGauge()).To(Equal(0.0))
		Eventually(freezeKept).Should(BeFalse())
		Consistently(func(g Gomega) { podsIntact(g, kubeletPodsAsSeen(pods)(g)) }).
			WithTimeout(5 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("no node ever tainted NoExecute, no pod ever marked NotReady")
		for _, name := range names {
			for _, v := range history.of(name) {
				Expect(lifecycleNoExecute(v.node)).To(BeEmpty(), "node %s tainted NoExecute at %v", name, v.at)
			}
		}
		for _, pod := range pods {
			Expect(markedBy(pod)(Default)).To(BeEmpty(), "pod %s marked NotReady", pod.Name)
		}
		AddReportEntry("the partition", fmt.Sprintf("last marked %v after the freeze; Ready and untainted %v after the resume; the freeze ended %v after it",
			lastMarked.Sub(frozenAt).Round(time.Second), readyAt.Sub(resumed).Round(time.Second), ended.Sub(resumed).Round(time.Second)))
	})
})
