package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
)

// podStaysReady checks, for d, that the pod is there and Ready.
func podStaysReady(pod *corev1.Pod, d time.Duration) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		g.Expect(deleted(pod)(g)).To(BeFalse(), "pod %s deleted", pod.Name)
		g.Expect(podReadyStatus(pod)(g)).To(Equal(corev1.ConditionTrue), "pod %s marked NotReady", pod.Name)
	}).WithTimeout(d).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// podStays checks, for d, that the pod is not deleted.
func podStays(pod *corev1.Pod, d time.Duration) {
	GinkgoHelper()
	Consistently(deleted(pod)).WithTimeout(d).WithPolling(100*time.Millisecond).Should(BeFalse(), "pod %s deleted", pod.Name)
}

var _ = Describe("Holds", Label("faults"), func() {
	var id string
	BeforeEach(func() {
		id = rand.String(5)
		startController(freezeOff)
	})

	It("hold pod NotReady marking in a paused pool and in one whose breaker tripped, as the freeze does", func() {
		f := startFleet(6, 1)
		nodes := f.Nodes()
		paused, tripped := "hp-"+id, "hb-"+id
		createPolicy(paused, v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting(paused), PauseRequests: []string{"maintenance"}})
		createPolicy(tripped, v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting(tripped), MaxUnhealthy: ptr.To(intstr.FromInt32(1))})
		labelPool(paused, nodes[:3]...)
		labelPool(tripped, nodes[3:]...)
		Eventually(policyCondition(paused, v1alpha1.ConditionEvictionAllowed)).Should(Equal("False/" + v1alpha1.ReasonPaused))
		allReady(f)

		By("a node of the paused pool and two of the other failing")
		f.Stop(nodes[0], nodes[3], nodes[4])
		for _, n := range []string{nodes[0], nodes[3], nodes[4]} {
			Eventually(readyStatus(n)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		}
		Eventually(policyCondition(tripped, v1alpha1.ConditionEvictionAllowed)).Should(Equal("False/" + v1alpha1.ReasonTooManyUnhealthy))
		for _, n := range []string{nodes[0], nodes[3], nodes[4]} {
			podStaysReady(fleetPod(n), 500*time.Millisecond)
		}
		podStaysReady(fleetPod(nodes[0]), grace)
		for _, n := range []string{nodes[0], nodes[3], nodes[4]} {
			Expect(hasNoExecuteTaint(n)).To(BeFalse(), "held node %s tainted NoExecute", n)
		}

		By("the pause lifted: the pod of the paused pool's node marked NotReady")
		updatePolicy(paused, func(s *v1alpha1.NodeHealthPolicySpec) { s.PauseRequests = nil })
		Eventually(podReadyStatus(fleetPod(nodes[0]))).Should(Equal(corev1.ConditionFalse))
	})

	It("fail closed: a held eviction is not released when the policy is deleted and made again, or edited into what the flags refuse; once the hold lifts, the countdown goes on from where it stopped", func() {
		f := startFleet(3, 1)
		nodes := f.Nodes()
		pool := "hf-" + id
		spec := v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting(pool)}
		createPolicy(pool, spec)
		labelPool(pool, nodes...)
		Eventually(policyCounts(pool)).Should(Equal([]int32{3, 3, 0}))
		allReady(f)
		dead, pod := nodes[0], fleetPod(nodes[0])

		By("a node dying and being tainted, then its pool paused before its pod's deadline")
		f.Stop(dead)
		added := unreachableAdded(dead)
		updatePolicy(pool, func(s *v1alpha1.NodeHealthPolicySpec) { s.PauseRequests = []string{"maintenance"} })
		Eventually(func() bool { return hasNoExecuteTaint(dead) }).Should(BeFalse(), "the held node kept its NoExecute taint")
		served := time.Since(added)
		podStays(pod, time.Until(added.Add(evictTimeout))+time.Second)

		By("the paused policy deleted, and made again a second later")
		Expect(k8s.Delete(context.Background(), &v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: pool}})).To(Succeed())
		podStays(pod, time.Second)
		paused := spec
		paused.PauseRequests = []string{"maintenance"}
		createPolicy(pool, paused)
		Eventually(policyCondition(pool, v1alpha1.ConditionEvictionAllowed)).Should(Equal("False/" + v1alpha1.ReasonPaused))
		podStays(pod, evictTimeout+time.Second)

		By("the policy edited into a grace the flags' eviction timeout refuses")
		updatePolicy(pool, func(s *v1alpha1.NodeHealthPolicySpec) { s.NodeMonitorGracePeriod = duration(2 * evictTimeout) })
		Eventually(policyCondition(pool, nodehealthpolicy.ConditionAccepted)).Should(Equal("False/" + nodehealthpolicy.ReasonInvalid))
		podStays(pod, evictTimeout+time.Second)
		Expect(hasNoExecuteTaint(dead)).To(BeFalse())

		By("the policy fixed and unpaused: the node tainted again, its countdown going on from the time it had served")
		lifted := time.Now()
		updatePolicy(pool, func(s *v1alpha1.NodeHealthPolicySpec) { s.NodeMonitorGracePeriod, s.PauseRequests = nil, nil })
		again := unreachableAdded(dead)
		// The taint is back dated by the time served before the pause, no
		// more (timeAdded is stored in whole seconds): the pause counted
		// for nothing, and what came before it was not lost.
		Expect(again).To(BeTemporally("<=", time.Now().Add(-served).Add(time.Second)), "the countdown started again")
		Expect(again).To(BeTemporally(">=", lifted.Add(-served).Add(-2*time.Second)), "the pause counted towards the countdown")
		podStays(pod, time.Until(again.Add(evictTimeout-time.Second)))
		Eventually(deleted(pod)).WithTimeout(time.Until(again.Add(evictTimeout)) + 5*time.Second).Should(BeTrue())
	})

	It("honor a NoExecute taint the controller did not add, such as out-of-service, while a pause holds its own", func() {
		f := startFleet(3, 1)
		nodes := f.Nodes()
		pool := "ho-" + id
		createPolicy(pool, v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting(pool), PauseRequests: []string{"maintenance"}})
		labelPool(pool, nodes...)
		Eventually(policyCondition(pool, v1alpha1.ConditionEvictionAllowed)).Should(Equal("False/" + v1alpha1.ReasonPaused))
		allReady(f)
		dead := nodes[0]
		f.Stop(dead)
		Eventually(readyStatus(dead)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))

		By("an administrator marking the node out of service")
		addNoExecute(dead, corev1.TaintNodeOutOfService)
		Eventually(deleted(fleetPod(dead))).Should(BeTrue())
		Expect(lifecycleNoExecute(getNode(dead))).To(BeEmpty(), "the pause let the controller's own taint through")
	})

	It("give a pool that lengthens the grace but leaves the startup grace to the flags at least its grace for both", func() {
		const poolGrace = 3 * startupGrace
		f := startFleet(1, 1)
		node := f.Nodes()[0]
		pool := "hs-" + id
		createPolicy(pool, v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting(pool),
			NodeMonitorGracePeriod: duration(poolGrace), PodEvictionTimeout: duration(4 * poolGrace)})
		labelPool(pool, node)
		Eventually(policyCondition(pool, nodehealthpolicy.ConditionAccepted)).Should(Equal("True/" + nodehealthpolicy.ReasonInForce))
		Eventually(policyCounts(pool)).Should(Equal([]int32{1, 1, 0}))
		allReady(f)
		stopped := time.Now()
		f.Stop(node)
		expectMarkedAt(markedAt(node, poolGrace+5*time.Second), stopped, poolGrace)
	})
})
