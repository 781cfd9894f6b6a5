package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// cachedReady waits until the manager's cache shows the pod, Ready: the
// state the controller acts on once its pod watch stalls.
func cachedReady(mgr ctrl.Manager, pod *corev1.Pod) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cached := &corev1.Pod{}
		g.Expect(mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(pod), cached)).To(Succeed())
		g.Expect(cached.UID).To(Equal(pod.UID))
		g.Expect(cached.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
	}).Should(Succeed())
}

// recreate deletes the pod and makes a new one under its name, on its node.
func recreate(old *corev1.Pod) *corev1.Pod {
	GinkgoHelper()
	Expect(k8s.Delete(context.Background(), old, client.GracePeriodSeconds(0))).To(Succeed())
	Eventually(deleted(old)).Should(BeTrue())
	reborn := createPod(old.Name, old.Spec.NodeName)
	Expect(reborn.UID).NotTo(Equal(old.UID))
	return reborn
}

// untouched checks that no write meant for a pod of the same name landed
// on pod: it is still there, Ready, and neither deleting nor a disruption
// target.
func untouched(pod *corev1.Pod) func(g Gomega) {
	return func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(pod.UID))
		g.Expect(got.DeletionTimestamp).To(BeNil(), "the new pod was deleted")
		for _, c := range got.Status.Conditions {
			g.Expect(c.Type).NotTo(Equal(corev1.DisruptionTarget), "the new pod was made a disruption target")
			if c.Type == corev1.PodReady {
				g.Expect(c.Status).To(Equal(corev1.ConditionTrue), "the new pod was marked NotReady")
			}
		}
	}
}

// everyPodWatched has the controllers watch every pod, as upstream does,
// rather than the pods of the nodes in trouble only.
func everyPodWatched(o *options.Options) { o.PodWatchNodes = 0 }

var _ = Describe("Pod writes by UID", Label("faults"), func() {
	It("never marks or evicts a new pod that took the name of one the controller's cache still shows", func() {
		hold := newWatchHoldOf("pods")
		DeferCleanup(hold.let)
		// Every pod watched, as upstream does: the cache is stale before
		// the node fails. The next spec stalls a node's own pod watch.
		mgr, _ := runManager(laggingCache(hold), everyPodWatched)
		liveNode()
		node, fail := failingNode()
		name := "reborn-" + rand.String(5)
		old := createPod(name, node)
		cachedReady(mgr, old)

		By("the pod watch stalling while the pod is deleted and made again under its name")
		hold.hold()
		reborn := recreate(old)

		By("the node failing: the writes meant for the old pod must not land on the new one")
		fail()
		Eventually(readyStatus(node)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		noExecuteAdded(node, corev1.TaintNodeUnreachable)
		Consistently(untouched(reborn)).WithTimeout(evictTimeout + 2*time.Second).Should(Succeed())

		By("the watch catching up: the new pod is the dead node's now, and goes like any other")
		hold.let()
		Eventually(podReadyStatus(reborn)).Should(Equal(corev1.ConditionFalse))
		Eventually(deleted(reborn)).WithTimeout(evictTimeout + 5*time.Second).Should(BeTrue())
	})

	It("never evicts a new pod that took the name of one its node's own pod watch still shows", func() {
		hold := newWatchHoldOf("pods")
		DeferCleanup(hold.let)
		// The pods are watched one node at a time (the default); only pod
		// watches stall, and the controller has no other.
		held := rest.CopyConfig(cfg)
		held.Wrap(hold.wrap)
		runManagerOn(held, nil)
		liveNode()
		node, fail := failingNode()
		name := "reborn-" + rand.String(5)
		old := createPod(name, node)

		By("the node failing: its pods listed by a watch of their own and marked NotReady")
		fail()
		Eventually(podReadyStatus(old)).WithTimeout(grace + 5*time.Second).Should(Equal(corev1.ConditionFalse))

		By("that watch stalling while the pod is deleted and made again under its name, before its deadline")
		hold.hold()
		reborn := recreate(old)

		By("the old pod's deadline passing: the eviction meant for it must not land on the new one")
		Consistently(untouched(reborn)).WithTimeout(evictTimeout + 2*time.Second).Should(Succeed())

		By("the watch catching up: the new pod goes like any other")
		hold.let()
		Eventually(podReadyStatus(reborn)).Should(Equal(corev1.ConditionFalse))
		Eventually(deleted(reborn)).WithTimeout(evictTimeout + 5*time.Second).Should(BeTrue())
	})

	It("keeps the conditions another writer set after the controller's cache last saw the pod", func() {
		const theirs = corev1.PodConditionType("example.com/Checked")
		hold := newWatchHoldOf("pods")
		DeferCleanup(hold.let)
		mgr, _ := runManager(laggingCache(hold), everyPodWatched)
		liveNode()
		node, fail := failingNode()
		pod := createPod("others-"+rand.String(5), node)
		cachedReady(mgr, pod)

		By("another writer adding a condition the controller's cache does not see")
		hold.hold()
		Eventually(func() error {
			got := &corev1.Pod{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
				return err
			}
			got.Status.Conditions = append(got.Status.Conditions, corev1.PodCondition{Type: theirs, Status: corev1.ConditionTrue})
			return k8s.Status().Update(context.Background(), got)
		}).Should(Succeed())

		By("the node failing: its pod marked NotReady, a disruption target and deleted, their condition kept")
		fail()
		Eventually(deleted(pod)).WithTimeout(grace + evictTimeout + 5*time.Second).Should(BeTrue())
		got := &corev1.Pod{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)).To(Succeed(),
			"the pod should wait for its kubelet, which this suite has not")
		types := map[corev1.PodConditionType]corev1.ConditionStatus{}
		for _, c := range got.Status.Conditions {
			types[c.Type] = c.Status
		}
		Expect(types).To(HaveKeyWithValue(corev1.PodReady, corev1.ConditionFalse))
		Expect(types).To(HaveKeyWithValue(corev1.DisruptionTarget, corev1.ConditionTrue))
		Expect(types).To(HaveKeyWithValue(theirs, corev1.ConditionTrue), "the controller's write dropped another writer's condition")
	})
})
