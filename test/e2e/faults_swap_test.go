package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

var _ = Describe("Taint swap", Label("faults"), func() {
	It("keeps a pod's countdown from the first NoExecute taint when a not-ready node becomes unreachable", func() {
		const toleration = 6 * time.Second
		startController()
		// A Ready node in the same zone, so that the zone is not fully
		// disrupted and nothing holds the taints.
		liveNode()
		name := newNodeName()
		createNode(name, corev1.ConditionFalse)
		createLease(name)
		stopBeats := leaseBeats(name)
		seconds := ptr.To(int64(toleration / time.Second))
		pod := createPod("swap-"+rand.String(5), name, tolerateUnreachable(seconds),
			corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds})

		By("the kubelet saying Ready=False: tainted not-ready")
		added := noExecuteAdded(name, corev1.TaintNodeNotReady)
		Consistently(deleted(pod)).WithTimeout(2 * time.Second).Should(BeFalse())

		By("its heartbeats stopping too: the taint swapped for unreachable, its time kept")
		stopBeats()
		Eventually(readyStatus(name)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Expect(noExecuteAdded(name, corev1.TaintNodeUnreachable)).To(BeTemporally("==", added),
			"the swap restarted the countdown")
		Eventually(deleted(pod)).WithTimeout(time.Until(added.Add(toleration))+2*time.Second).Should(BeTrue(),
			"the pod outlived its toleration, counted from the first taint")
	})
})
