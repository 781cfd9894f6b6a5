package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
)

const (
	readyTrue        = "True/KubeletTrue"
	markedUnknown    = "Unknown/NodeStatusUnknown"
	markedNeverSeen  = "Unknown/NodeStatusNeverUpdated"
	unreachableTaint = corev1.TaintNodeUnreachable
	notReadyTaint    = corev1.TaintNodeNotReady
)

var _ = Describe("Node health", func() {
	BeforeEach(func() { startController() })

	It("marks a node whose Lease stops Unknown and taints it, within a second of its deadline", Label("compat"), func() {
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		createLease(name)
		stop := leaseBeats(name)

		By("staying healthy on Lease renewals alone while the status heartbeat goes stale")
		Consistently(readyStatus(name)).WithTimeout(2 * grace).Should(Equal(readyTrue))
		Eventually(noScheduleTaints(name)).Should(BeEmpty())

		By("being marked once the renewals stop")
		last := stop()
		before := markDelays()
		// The controller observed the last renewal after it was written, so
		// its deadline is no earlier than this one.
		Consistently(readyStatus(name)).WithTimeout(time.Until(last.Add(grace)) - 100*time.Millisecond).
			Should(Equal(readyTrue))
		Eventually(readyStatus(name)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(noScheduleTaints(name)).Should(ConsistOf(unreachableTaint))

		node := getNode(name)
		for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			c := condition(node, t)
			Expect(c).NotTo(BeNil(), "condition %s", t)
			Expect(c.Status).To(Equal(corev1.ConditionUnknown))
			Expect(c.Reason).To(Equal("NodeStatusNeverUpdated"))
		}
		Expect(condition(node, corev1.NodeReady).Message).To(Equal("Kubelet stopped posting node status."))

		By("marking it within a second of the deadline, as the controller measured it")
		h := markDelays()
		Expect(h.GetSampleCount()).To(BeNumerically(">", before.GetSampleCount()))
		Expect(maxDelayBoundSince(before, h)).To(BeNumerically("<=", 1.0))
		Eventually(eventReasons(name)).Should(ContainElements(nodehealth.ReasonRegisteredNode, nodehealth.ReasonNodeNotReady))
	})

	It("keeps a node with no Lease alive on status heartbeats", func() {
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		stop := statusBeats(name)
		Consistently(readyStatus(name)).WithTimeout(2 * grace).Should(Equal(readyTrue))
		stop()
		Eventually(readyStatus(name)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
	})

	It("clears the marks when the node reports again", func() {
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		Eventually(readyStatus(name)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(noScheduleTaints(name)).Should(ConsistOf(unreachableTaint))

		postReady(name, corev1.ConditionTrue)
		Eventually(noScheduleTaints(name)).Should(BeEmpty())
		Expect(readyStatus(name)(Default)).To(Equal(readyTrue))
	})

	It("gives a node that never reported the startup grace, then marks it never updated", func() {
		name := newNodeName()
		created := time.Now()
		createNode(name, "")
		// The apiserver's admission taints a new node not-ready; that stays
		// while the node has not reported.
		Eventually(noScheduleTaints(name)).Should(ConsistOf(notReadyTaint))
		Consistently(readyStatus(name)).WithTimeout(time.Until(created.Add(startupGrace)) - 100*time.Millisecond).
			Should(Equal("<none>"))
		Eventually(readyStatus(name)).WithTimeout(startupGrace + 5*time.Second).Should(Equal(markedNeverSeen))
		Eventually(noScheduleTaints(name)).Should(ConsistOf(unreachableTaint))
		node := getNode(name)
		c := condition(node, corev1.NodeReady)
		Expect(c.Message).To(Equal("Kubelet never posted node status."))
		Expect(c.LastHeartbeatTime.Time).To(BeTemporally("==", node.CreationTimestamp.Time))

		By("not reading its own mark as a heartbeat: the node stays marked")
		Consistently(readyStatus(name)).WithTimeout(grace).Should(Equal(markedNeverSeen))
	})

	It("follows the kubelet's own Ready=False with the not-ready taint, without writing conditions", func() {
		name := newNodeName()
		createNode(name, corev1.ConditionFalse)
		createLease(name)
		leaseBeats(name)
		Eventually(noScheduleTaints(name)).Should(ConsistOf(notReadyTaint))
		Consistently(readyStatus(name)).WithTimeout(grace).Should(Equal("False/KubeletFalse"))
	})

	It("keeps condition taints and leaves other taints alone", func() {
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		createLease(name)
		leaseBeats(name)
		Eventually(func() error {
			node := getNode(name)
			node.Spec.Unschedulable = true
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "example.com/dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
			return k8s.Update(context.Background(), node)
		}).Should(Succeed())
		Eventually(noScheduleTaints(name)).Should(ConsistOf(corev1.TaintNodeUnschedulable, "example.com/dedicated"))
	})

	It("counts a renewTime that moves backwards as a heartbeat", func() {
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		createLease(name)
		// A node clock an hour behind, and going further back on each beat.
		back := time.Now().Add(-time.Hour)
		beat(func() {
			back = back.Add(-time.Second)
			renewLease(name, back)
		})
		Consistently(readyStatus(name)).WithTimeout(2 * grace).Should(Equal(readyTrue))
	})
})

var _ = Describe("Bad input", func() {
	BeforeEach(func() { startController() })

	It("survives Leases without renewTime, holder or Node, and a Node with a status no API version defines", func() {
		ctx := context.Background()
		orphan := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: newNodeName()}}
		Expect(k8s.Create(ctx, orphan)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, orphan) })

		bare := newNodeName()
		createNode(bare, corev1.ConditionTrue)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: bare}}
		Expect(k8s.Create(ctx, lease)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, lease) })

		odd := newNodeName()
		createNode(odd, "Maybe")
		createLease(odd)
		leaseBeats(odd)

		By("the empty Lease is no heartbeat, so its node is marked at the deadline")
		Eventually(readyStatus(bare)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))

		By("the undefined status is not Ready: the node is kept off limits but not marked while it heartbeats")
		Eventually(noScheduleTaints(odd)).Should(ConsistOf(unreachableTaint))
		Consistently(readyStatus(odd)).WithTimeout(grace).Should(Equal("Maybe/KubeletMaybe"))

		By("the apiserver refuses a negative lease duration before the controller sees it")
		bad := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: newNodeName()},
			Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](-1)},
		}
		Expect(k8s.Create(ctx, bad)).NotTo(Succeed())
	})

	It("forgets a deleted node and says so", func() {
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		Eventually(eventReasons(name)).Should(ContainElement(nodehealth.ReasonRegisteredNode))
		deleteNode(name)
		Eventually(eventReasons(name)).Should(ContainElement(nodehealth.ReasonRemovingNode))
	})
})

var _ = Describe("Restart", func() {
	It("gives every node a full grace period from the moment the controller starts", func() {
		stop := startController()
		name := newNodeName()
		createNode(name, corev1.ConditionTrue)
		createLease(name)
		Eventually(eventReasons(name)).Should(ContainElement(nodehealth.ReasonRegisteredNode))
		stop()

		// The node's heartbeats are older than a grace period by now.
		Eventually(func() bool { return time.Since(getNode(name).CreationTimestamp.Time) > grace+time.Second }).
			WithTimeout(2 * grace).Should(BeTrue())
		started := time.Now()
		startController()
		Consistently(readyStatus(name)).WithTimeout(time.Until(started.Add(grace)) - 100*time.Millisecond).
			Should(Equal(readyTrue))
		Eventually(readyStatus(name)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))

		By("announcing the nodes registered since it started, not again the ones it found")
		// The new controller's events go out in order: its NodeNotReady
		// follows any RegisteredNode of its first look at the node.
		Eventually(eventReasons(name)).Should(ContainElement(nodehealth.ReasonNodeNotReady))
		registered := 0
		for _, reason := range eventReasons(name)(Default) {
			if reason == nodehealth.ReasonRegisteredNode {
				registered++
			}
		}
		Expect(registered).To(Equal(1), "the node was announced again after the restart")
		later := newNodeName()
		createNode(later, corev1.ConditionTrue)
		Eventually(eventReasons(later)).Should(ContainElement(nodehealth.ReasonRegisteredNode))
	})
})
