package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers/podeviction"
)

// createPod binds a pod to a node, with the given NoExecute tolerations.
func createPod(name, node string, tolerations ...corev1.Toleration) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: tolerations,
		},
	}
	Expect(k8s.Create(context.Background(), pod)).To(Succeed())
	DeferCleanup(func() {
		_ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
	})
	return pod
}

func tolerateUnreachable(seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

// setNoExecute adds (or, with remove, takes away) a NoExecute taint, as the
// node health controller or a person would.
func setNoExecute(node, key string, added time.Time, remove bool) {
	Eventually(func() error {
		n := getNode(node)
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != key || t.Effect != corev1.TaintEffectNoExecute {
				taints = append(taints, t)
			}
		}
		if !remove {
			taints = append(taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}})
		}
		n.Spec.Taints = taints
		return k8s.Update(context.Background(), n)
	}).Should(Succeed())
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

var _ = Describe("Pod eviction", func() {
	It("evicts each pod at its own deadline: toleration seconds, the default timeout, never", func() {
		startController()
		node := newNodeName()
		createNode(node, corev1.ConditionTrue)
		createLease(node)
		leaseBeats(node)
		short := createPod(node+"-short", node, tolerateUnreachable(ptr.To[int64](2)))
		plain := createPod(node+"-plain", node)
		forever := createPod(node+"-forever", node, tolerateUnreachable(nil))

		added := time.Now().Truncate(time.Second) // timeAdded is stored in whole seconds
		setNoExecute(node, corev1.TaintNodeUnreachable, added, false)

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
		Eventually(func(g Gomega) []string {
			list := &eventsv1.EventList{}
			g.Expect(k8s.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				if e.Regarding.Name == short.Name {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).Should(ContainElement(podeviction.ReasonTaintManagerEviction))
		Expect(maxDelayBound(evictionDelays())).To(BeNumerically("<=", 1.0))
	})

	It("evicts at once a pod that does not tolerate some other NoExecute taint", func() {
		startController()
		node := newNodeName()
		createNode(node, corev1.ConditionTrue)
		pod := createPod(node+"-p", node, tolerateUnreachable(nil))
		setNoExecute(node, "example.com/maintenance", time.Now(), false)
		Eventually(deleted(pod)).WithTimeout(3 * time.Second).Should(BeTrue())
	})

	It("cancels a pending eviction when the taint goes away", func() {
		startController()
		node := newNodeName()
		createNode(node, corev1.ConditionTrue)
		pod := createPod(node+"-p", node, tolerateUnreachable(ptr.To[int64](2)))
		added := time.Now().Truncate(time.Second)
		setNoExecute(node, corev1.TaintNodeUnreachable, added, false)
		setNoExecute(node, corev1.TaintNodeUnreachable, added, true)
		Consistently(deleted(pod)).WithTimeout(time.Until(added.Add(2*time.Second)) + 2*time.Second).Should(BeFalse())
	})

	It("keeps a pending eviction's deadline across a controller restart", func() {
		stop := startController()
		node := newNodeName()
		createNode(node, corev1.ConditionTrue)
		createLease(node)
		leaseBeats(node)
		pod := createPod(node+"-p", node, tolerateUnreachable(ptr.To[int64](3)))
		added := time.Now().Truncate(time.Second)
		setNoExecute(node, corev1.TaintNodeUnreachable, added, false)
		Consistently(deleted(pod)).WithTimeout(time.Second).Should(BeFalse())
		stop()

		startController()
		// The new controller neither restarts the three seconds nor forgets them.
		Consistently(deleted(pod)).WithTimeout(time.Until(added.Add(3*time.Second)) - 100*time.Millisecond).Should(BeFalse())
		Eventually(deleted(pod)).WithTimeout(3 * time.Second).Should(BeTrue())
	})
})
