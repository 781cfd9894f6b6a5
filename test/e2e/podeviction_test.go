package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
)

// createPod binds a ready pod to a node, with the given tolerations.
func createPod(name, node string, tolerations ...corev1.Toleration) *corev1.Pod {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: tolerations,
		},
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func() {
		_ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
	})
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

func tolerateUnreachable(seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

// addNoExecute adds a NoExecute taint, as a person or another controller would.
func addNoExecute(node, key string) {
	Eventually(func() error {
		n := getNode(node)
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.Now())})
		return k8s.Update(context.Background(), n)
	}).Should(Succeed())
}

// noExecuteAdded waits for the node's NoExecute taint and returns its
// timeAdded, the moment eviction deadlines count from.
func noExecuteAdded(node, key string) time.Time {
	var added time.Time
	Eventually(func(g Gomega) {
		for _, t := range getNode(node).Spec.Taints {
			if t.Key == key && t.Effect == corev1.TaintEffectNoExecute {
				g.Expect(t.TimeAdded).NotTo(BeNil())
				added = t.TimeAdded.Time
				return
			}
		}
		g.Expect(false).To(BeTrue(), "no %s NoExecute taint on %s", key, node)
	}).WithTimeout(grace + 5*time.Second).Should(Succeed())
	return added
}

// deleted reports whether the pod is gone or terminating: without a kubelet,
// a deleted pod keeps its deletionTimestamp until its grace period ends.
func deleted(pod *corev1.Pod) func(g Gomega) bool {
	return func(g Gomega) bool {
		got := &corev1.Pod{}
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)
		if apierrors.IsNotFound(err) {
			return true
		}
		g.Expect(err).NotTo(HaveOccurred())
		return got.DeletionTimestamp != nil
	}
}

func podReadyStatus(pod *corev1.Pod) func(g Gomega) corev1.ConditionStatus {
	return func(g Gomega) corev1.ConditionStatus {
		got := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)).To(Succeed())
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status
			}
		}
		return ""
	}
}

// liveNode creates a node that heartbeats through its Lease until the spec
// ends, so that the cluster is never entirely down.
func liveNode() string {
	name := newNodeName()
	createNode(name, corev1.ConditionTrue)
	createLease(name)
	leaseBeats(name)
	return name
}

// failingNode creates a node whose Lease renews until the returned function
// is called.
func failingNode() (name string, fail func() time.Time) {
	name = newNodeName()
	createNode(name, corev1.ConditionTrue)
	createLease(name)
	return name, leaseBeats(name)
}

var _ = Describe("Pod eviction", func() {
	It("marks the pods of a failed node NotReady and evicts each at its deadline: seconds, default timeout, never", Label("compat"), func() {
		delaysBefore := evictionDelays()
		startController()
		liveNode()
		node, fail := failingNode()
		short := createPod(node+"-short", node, tolerateUnreachable(ptr.To[int64](2)))
		plain := createPod(node+"-plain", node)
		forever := createPod(node+"-forever", node, tolerateUnreachable(nil))

		fail()
		added := noExecuteAdded(node, corev1.TaintNodeUnreachable)
		Eventually(podReadyStatus(forever)).Should(Equal(corev1.ConditionFalse))

		Consistently(deleted(short)).WithTimeout(time.Until(added.Add(2*time.Second)) - 100*time.Millisecond).Should(BeFalse())
		Eventually(deleted(short)).WithTimeout(5 * time.Second).Should(BeTrue())
		Consistently(deleted(plain)).WithTimeout(time.Until(added.Add(evictTimeout)) - 100*time.Millisecond).Should(BeFalse())
		Eventually(deleted(plain)).WithTimeout(5 * time.Second).Should(BeTrue())
		Consistently(deleted(forever)).WithTimeout(time.Second).Should(BeFalse())

		got := &corev1.Pod{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(short), got)).To(Succeed())
		Expect(got.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.DisruptionTarget),
			HaveField("Reason", "DeletionByTaintManager"),
		)))
		By("reporting each event under kube-controller-manager's component name")
		Eventually(reasonsFrom(podeviction.EventSource, "Pod", short.Name)).Should(ContainElement(podeviction.ReasonTaintManagerEviction))
		Eventually(reasonsFrom(nodehealth.EventSource, "Pod", forever.Name)).Should(ContainElement(nodehealth.ReasonNodeNotReady))
		Eventually(reasonsFrom(nodehealth.EventSource, "Node", node)).Should(ContainElement(nodehealth.ReasonNodeNotReady))
		Expect(reasonsFrom(nodehealth.EventSource, "Pod", short.Name)(Default)).NotTo(ContainElement(podeviction.ReasonTaintManagerEviction))
		Expect(maxDelayBoundSince(delaysBefore, evictionDelays())).To(BeNumerically("<=", 1.0))
	})

	It("marks NotReady a pod that turns up Ready on a node already marked", func() {
		startController()
		liveNode()
		node, fail := failingNode()
		fail()
		Eventually(readyStatus(node)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		late := createPod(node+"-late", node, tolerateUnreachable(nil))
		Eventually(podReadyStatus(late)).Should(Equal(corev1.ConditionFalse))
	})

	It("evicts at once a pod that does not tolerate some other NoExecute taint", func() {
		startController()
		node := liveNode()
		pod := createPod(node+"-p", node, tolerateUnreachable(nil))
		addNoExecute(node, "example.com/maintenance")
		Eventually(deleted(pod)).WithTimeout(3 * time.Second).Should(BeTrue())
	})

	It("cancels a pending eviction when the node recovers", func() {
		startController()
		liveNode()
		node, fail := failingNode()
		pod := createPod(node+"-p", node, tolerateUnreachable(ptr.To[int64](3)))
		fail()
		added := noExecuteAdded(node, corev1.TaintNodeUnreachable)
		postReady(node, corev1.ConditionTrue)
		Eventually(func() []corev1.Taint { return getNode(node).Spec.Taints }).Should(BeEmpty())
		Consistently(deleted(pod)).WithTimeout(time.Until(added.Add(3*time.Second)) + time.Second).Should(BeFalse())
	})

	It("keeps a pending eviction's deadline across a controller restart", func() {
		stop := startController()
		liveNode()
		node, fail := failingNode()
		pod := createPod(node+"-p", node, tolerateUnreachable(ptr.To[int64](3)))
		fail()
		added := noExecuteAdded(node, corev1.TaintNodeUnreachable)
		stop()

		startController()
		// The new controller neither restarts the three seconds nor forgets them.
		Consistently(deleted(pod)).WithTimeout(time.Until(added.Add(3*time.Second)) - 100*time.Millisecond).Should(BeFalse())
		Eventually(deleted(pod)).WithTimeout(3 * time.Second).Should(BeTrue())
	})
})
