package e2e

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/owners"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// ours is the field manager of the controller's processes.
const ours = "node-lifecycle-controller"

// The cut-over of docs/control-plane.md: the dry run beside
// kube-controller-manager's loops, those loops turned off, the controller
// writing in the dry run's place, and the way back. One controller acts at
// a time: kube-controller-manager's loops are off before this controller
// writes, and the nodes that die in between are judged once it starts,
// each with a full grace from its start.
var _ = Describe("The cut-over from kube-controller-manager's loops, and back", Label("upstream"), func() {
	It("has one controller act on a node at a time, and judges every node that dies at each step", func() {
		s := startSidePlane()
		f := s.startFleet()
		zoneA, zoneB := f.InZone(f.Zones()[0]), f.InZone(f.Zones()[1])
		id := rand.String(4)
		// One silent node per zone of three at most: more would put the
		// zone in partial disruption, where a cluster this small taints
		// nothing, in either controller.

		By("1. the dry run beside kube-controller-manager: a node dies, kube-controller-manager alone marks and taints it")
		dry := s.startDryRunProcess("cut-dry-" + id)
		Eventually(s.dryRunLeader).ShouldNot(BeEmpty())
		first := zoneA[0]
		f.Stop(first)
		Eventually(func(g Gomega) {
			expectMarkedByBoth(g, episodeOf(g, s.report(g), first))
		}).WithTimeout(sideGrace + 30*time.Second).WithPolling(time.Second).Should(Succeed())
		Eventually(s.lifecycleWriters(first)).WithTimeout(sideGrace + 30*time.Second).Should(Equal(
			map[owners.What]string{owners.Mark: "kube-controller-manager", owners.Taints: "kube-controller-manager"}))
		s.expectNothingWritten(ours)
		f.Resume(first)
		Eventually(s.untainted(first)).WithTimeout(30 * time.Second).Should(BeTrue())

		By("2. kube-controller-manager restarted without its two loops, kubeadm's own controllers on; a node dies meanwhile")
		Expect(s.kcm.Stop(10 * time.Second)).To(Succeed())
		s.startKubeControllerManager("bootstrapsigner,tokencleaner")
		gap := zoneB[0]
		f.Stop(gap)

		By("3. the dry run stopped, the controller writing in its place: it judges the node that died in between, and the next")
		Expect(dry.Stop(10 * time.Second)).To(Succeed())
		writer := s.startWritingProcess("cut-w-" + id)
		after := zoneA[1]
		f.Stop(after)
		for _, n := range []string{gap, after} {
			Eventually(s.lifecycleWriters(n)).WithTimeout(2*sideGrace+30*time.Second).Should(Equal(
				map[owners.What]string{owners.Mark: ours, owners.Taints: ours}), "node %s", n)
		}
		Expect(s.nodeEvents(nodehealth.ReasonForeignLifecycleWriter)()).To(BeEmpty(),
			"the controller took kube-controller-manager's marks from before the cut-over for a second writer")

		By("4. the way back: the controller stopped, kube-controller-manager restarted with its loops; the next death is its")
		f.Resume(gap, after)
		for _, n := range []string{gap, after} {
			Eventually(s.untainted(n)).WithTimeout(30*time.Second).Should(BeTrue(), "node %s", n)
		}
		Expect(writer.Stop(10 * time.Second)).To(Succeed())
		Expect(s.kcm.Stop(10 * time.Second)).To(Succeed())
		s.startKubeControllerManager(upstreamLoops + ",bootstrapsigner,tokencleaner")
		back := zoneB[1]
		f.Stop(back)
		Eventually(s.lifecycleWriters(back)).WithTimeout(sideGrace + 30*time.Second).Should(Equal(
			map[owners.What]string{owners.Mark: "kube-controller-manager", owners.Taints: "kube-controller-manager"}))
	})
})

// startWritingProcess runs the controller's binary beside the control plane
// at the dry run's timings, writing, on the Lease "nlc".
func (s *sideBySide) startWritingProcess(name string) *harness.Process {
	GinkgoHelper()
	return startControllerProcessOn(s.env, GinkgoWriter, name, "nlc", sideFlags...)
}

// lifecycleWriters returns, while the node is marked Unknown, who last wrote
// its mark and its taints, as its managed fields say; nil while it is not.
func (s *sideBySide) lifecycleWriters(name string) func(g Gomega) map[owners.What]string {
	return func(g Gomega) map[owners.What]string {
		node := &corev1.Node{}
		g.Expect(s.k8s.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
		if c := condition(node, corev1.NodeReady); c == nil || c.Status != corev1.ConditionUnknown || !hasLifecycleNoExecute(node) {
			return nil
		}
		writers := map[owners.What]string{}
		for _, e := range owners.Of(node.ManagedFields) {
			for _, what := range e.Holds {
				writers[what] = e.Manager
			}
		}
		return writers
	}
}

// untainted reports whether the node is Ready and carries no node lifecycle
// taint.
func (s *sideBySide) untainted(name string) func(g Gomega) bool {
	return func(g Gomega) bool {
		node := &corev1.Node{}
		g.Expect(s.k8s.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
		c := condition(node, corev1.NodeReady)
		return c != nil && c.Status == corev1.ConditionTrue && !owners.InTrouble(node)
	}
}

// nodeEvents lists the messages of the events with the reason on any Node.
func (s *sideBySide) nodeEvents(reason string) func() []string {
	return func() []string {
		list := &corev1.EventList{}
		Expect(s.k8s.List(context.Background(), list, client.MatchingFields{"involvedObject.kind": "Node", "reason": reason})).To(Succeed())
		var out []string
		for _, e := range list.Items {
			out = append(out, e.InvolvedObject.Name+": "+e.Message)
		}
		return out
	}
}

// hasLifecycleNoExecute reports whether the node carries a node lifecycle
// NoExecute taint.
func hasLifecycleNoExecute(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute && eviction.IsLifecycleTaint(t.Key)
	})
}
