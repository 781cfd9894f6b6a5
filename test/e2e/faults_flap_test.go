package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

var _ = Describe("Flapping node", Label("faults"), func() {
	It("marks a node once per gap past its grace, not for gaps within it, and writes a bounded number of taints", func() {
		const flaps = 4
		// Gaps between the kubelet's status posts: one just inside the
		// grace period, one just outside, over and over.
		inside, outside := grace*3/4, grace*3/2

		writes := &writeLog{counts: map[string]int{}}
		runManager(func(o *ctrl.Options) { o.NewClient = crashableClient(writes, nil, nil) })
		node := newNodeName()
		createNode(node, corev1.ConditionTrue)
		// No toleration: the pod would go --pod-eviction-timeout (4s)
		// after a NoExecute taint, longer than any one outside gap.
		pod := createPod("flap-"+node, node)
		Eventually(nodesReadyAndUntainted(node)).Should(Succeed())
		unreachableBefore, healthyBefore := transitionsTo("Unreachable"), transitionsTo("Healthy")

		By("the kubelet posting its status with gaps of " + inside.String() + " and " + outside.String())
		for range flaps {
			for _, gap := range []time.Duration{inside, outside} {
				// The kubelet's clock, not a wait for the controller.
				<-time.After(gap)
				postReady(node, corev1.ConditionTrue)
			}
		}
		stop := statusBeats(node)
		defer stop()
		Eventually(nodesReadyAndUntainted(node)).Should(Succeed())

		By("one mark and one recovery per outside gap, and nothing for the inside ones")
		Eventually(func() float64 { return transitionsTo("Healthy") - healthyBefore }).Should(BeNumerically("==", flaps))
		Expect(transitionsTo("Unreachable") - unreachableBefore).To(BeNumerically("==", flaps))
		Expect(writes.count("patch-status", node)).To(Equal(flaps), "the node's status was written more than once per flap")
		// Per flap: the NoSchedule and NoExecute taints go on, and come
		// off, in at most four writes of the Node.
		GinkgoWriter.Printf("%d flaps: %d status writes, %d taint writes\n",
			flaps, writes.count("patch-status", node), writes.count("patch", node))
		Expect(writes.count("patch", node)).To(BeNumerically("<=", 4*flaps))
		Expect(deleted(pod)(Default)).To(BeFalse(), "the pod of a flapping node was evicted")
	})
})
