package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// podWatches reads the node_lifecycle_pod_watches gauge of the given scope.
func podWatches(scope string) func() float64 {
	return func() float64 { return metricSum("node_lifecycle_pod_watches", "scope", scope) }
}

var _ = Describe("Pod watches", func() {
	It("watches the pods of the nodes in trouble only, every pod above the limit, and marks and evicts them alike", func() {
		// The freeze is off: the two nodes fail one after the other, and
		// this spec is about what is watched, not the guard.
		startController(func(o *options.Options) {
			o.PodWatchNodes = 1
			o.PartitionFreezeThreshold = 0
		})
		liveNode()
		a, failA := failingNode()
		b, failB := failingNode()
		plainA, foreverA := createPod(a+"-plain", a), createPod(a+"-forever", a, tolerateUnreachable(nil))
		plainB, foreverB := createPod(b+"-plain", b), createPod(b+"-forever", b, tolerateUnreachable(nil))

		By("watching no pod while every node is Ready")
		Consistently(podWatches("node")).WithTimeout(grace).Should(BeZero())
		Expect(podWatches("cluster")()).To(BeZero())

		By("watching the pods of one failed node on their own")
		failA()
		Eventually(podReadyStatus(foreverA)).Should(Equal(corev1.ConditionFalse))
		Expect(podWatches("node")()).To(Equal(1.0))
		Expect(podWatches("cluster")()).To(BeZero())
		Eventually(deleted(plainA)).WithTimeout(grace + evictTimeout + 5*grace).Should(BeTrue())

		By("watching every pod once two nodes have failed, above the limit of one")
		failB()
		Eventually(podWatches("cluster")).Should(Equal(1.0))
		Eventually(podWatches("node")).Should(BeZero())
		Eventually(podReadyStatus(foreverB)).Should(Equal(corev1.ConditionFalse))
		Eventually(deleted(plainB)).WithTimeout(grace + evictTimeout + 5*grace).Should(BeTrue())
		Consistently(deleted(foreverA)).WithTimeout(grace).Should(BeFalse())

		By("watching no pod again once both nodes are back")
		for _, n := range []string{a, b} {
			postReady(n, corev1.ConditionTrue)
			leaseBeats(n)
			Eventually(func() []corev1.Taint { return getNode(n).Spec.Taints }).Should(BeEmpty())
		}
		Eventually(podWatches("cluster")).WithTimeout(3 * grace).Should(BeZero())
		Eventually(podWatches("node")).WithTimeout(3 * grace).Should(BeZero())
		Expect(deleted(foreverA)(Default)).To(BeFalse())
		Expect(deleted(foreverB)(Default)).To(BeFalse())
	})
})
