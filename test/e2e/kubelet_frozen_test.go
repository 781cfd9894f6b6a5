package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// tolerateNotReady tolerates the not-ready NoExecute taint for seconds, or
// for ever when nil.
func tolerateNotReady(seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

// podGone reports whether the pod is gone from the API: deleted, and
// finished by a live kubelet.
func podGone(pod *corev1.Pod) func(g Gomega) bool {
	return func(g Gomega) bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return true
		}
		g.Expect(err).NotTo(HaveOccurred())
		return false
	}
}

// lifecycleTaints returns the node's unreachable and not-ready taints, of
// either effect.
func lifecycleTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			out = append(out, t)
		}
	}
	return out
}

// markedBy reports whether the controller marked the pod NotReady: it
// records NodeNotReady about each pod it marks.
func markedBy(pod *corev1.Pod) func(g Gomega) []string {
	return reasonsFrom(nodehealth.EventSource, "Pod", pod.Name)
}

var _ = Describe("A real kubelet frozen and resumed", Label("kubelet"), func() {
	// SIGSTOP stops every timer of the kubelet, so on SIGCONT its Lease
	// renewal, its node status loop and its runtime check all run at once.
	// Frozen for more than 30s (kubelet's maxWaitForContainerRuntime, which
	// any freeze past upstream's 50s grace exceeds), its status loop may run
	// before its runtime check and post Ready=False, "container runtime is
	// down", until its next status check; otherwise it posts Ready=True at
	// once. Which comes first is a race inside the kubelet, so the spec
	// takes either, and checks each by its rules.
	It("marks and taints a kubelet frozen past the grace and marks its pods NotReady; resumed, it keeps one countdown until the kubelet says Ready, then loses its taints, and the kubelet restores its pods", func() {
		zone := "zone-" + newNodeName()
		kubelets := startHollowKubelets(zone, newNodeName(), newNodeName())
		live, frozen := kubelets[0], kubelets[1]
		beats := watchHeartbeats(frozen.Name)
		history := recordNodes(harness.LabelZone + "=" + zone)
		startController(kubeletTimings)

		// Deadlines, counted from the NoExecute taint: gone's runs out
		// while the kubelet is frozen, window's after it is resumed, and
		// forever's never.
		const resumeAfter, windowSeconds = 3 * time.Second, 6
		gone := createKubeletPod(frozen.Name+"-gone", frozen.Name, tolerateUnreachable(ptr.To[int64](2)))
		window := createKubeletPod(frozen.Name+"-window", frozen.Name,
			tolerateUnreachable(ptr.To[int64](windowSeconds)), tolerateNotReady(ptr.To[int64](windowSeconds)))
		forever := createKubeletPod(frozen.Name+"-forever", frozen.Name, tolerateUnreachable(nil), tolerateNotReady(nil))
		stays := createKubeletPod(live.Name+"-stays", live.Name)
		for _, pod := range []*corev1.Pod{gone, window, forever, stays} {
			Eventually(podReadyStatus(pod)).WithTimeout(time.Minute).Should(Equal(corev1.ConditionTrue), "pod %s", pod.Name)
		}

		By("freezing it just after a Lease renewal: silent from then on, and frozen for more than 30s")
		Eventually(beats.renewalCount).WithTimeout(3 * harness.KubeletLeaseRenewInterval).Should(BeNumerically(">=", 2))
		renewed := beats.renewalCount()
		Eventually(beats.renewalCount).WithTimeout(2 * harness.KubeletLeaseRenewInterval).WithPolling(10 * time.Millisecond).
			Should(BeNumerically(">", renewed))
		Expect(frozen.Freeze()).To(Succeed())
		frozenAt := time.Now()

		By("marking it Unknown at the grace, tainting it unreachable, marking its pods NotReady and evicting the pod whose toleration ran out")
		Eventually(readyStatus(frozen.Name)).WithTimeout(kubeletGrace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(noScheduleTaints(frozen.Name)).Should(ConsistOf(unreachableTaint))
		added := noExecuteAdded(frozen.Name, corev1.TaintNodeUnreachable)
		marked := condition(getNode(frozen.Name), corev1.NodeReady).LastTransitionTime
		for _, pod := range []*corev1.Pod{window, forever} {
			Eventually(podReadyStatus(pod)).Should(Equal(corev1.ConditionFalse), "pod %s", pod.Name)
			Eventually(markedBy(pod)).Should(ContainElement(nodehealth.ReasonNodeNotReady), "pod %s", pod.Name)
		}
		Eventually(terminating(gone)).WithTimeout(time.Until(added.Add(5 * time.Second))).Should(BeTrue())
		// Until the resume, nothing else goes and nothing comes back.
		Consistently(func(g Gomega) {
			g.Expect(readyStatus(frozen.Name)(g)).To(Equal(markedUnknown))
			g.Expect(terminating(window)(g)).To(BeFalse())
			g.Expect(terminating(forever)(g)).To(BeFalse())
		}).WithTimeout(time.Until(added.Add(resumeAfter))).Should(Succeed())

		By("resuming it: it renews its Lease at once, and posts Ready=True at once or at its next status check")
		before := beats.renewalCount()
		Expect(frozen.Resume()).To(Succeed())
		resumed := time.Now()
		Expect(resumed.Sub(frozenAt)).To(BeNumerically(">", 30*time.Second), "frozen too short for the kubelet to take its runtime for down")
		Eventually(beats.renewalCount).WithTimeout(2 * time.Second).Should(BeNumerically(">", before))
		Eventually(readyStatus(frozen.Name)).WithTimeout(harness.KubeletStatusInterval + 5*time.Second).Should(HavePrefix("True/"))

		By("keeping one countdown, never marking it again, until the kubelet says Ready, and then taking its taints off")
		Eventually(func() []corev1.Taint { return lifecycleTaints(getNode(frozen.Name)) }).Should(BeEmpty())
		var readyAt, untaintedAt time.Time
		saidFalse := false
		// The node's Ready status at the window pod's deadline, as the
		// controller's eviction found it: Unknown unless the kubelet
		// had posted its own by then.
		deadline := added.Add(windowSeconds * time.Second)
		readyAtDeadline := corev1.ConditionUnknown
		for _, v := range history.of(frozen.Name) {
			if v.at.Before(resumed) {
				continue
			}
			ready := condition(v.node, corev1.NodeReady)
			if !v.at.After(deadline) {
				readyAtDeadline = ready.Status
			}
			if readyAt.IsZero() {
				switch ready.Status {
				case corev1.ConditionTrue:
					readyAt = v.at
				case corev1.ConditionFalse:
					// The kubelet's, not the controller's.
					saidFalse = true
					Expect(ready.Reason).To(Equal("KubeletNotReady"), "at %v", v.at)
				default:
					Expect(ready.Reason).To(Equal("NodeStatusUnknown"), "at %v", v.at)
					Expect(ready.LastTransitionTime).To(Equal(marked), "marked again at %v", v.at)
				}
			}
			if readyAt.IsZero() {
				// One NoExecute taint, unreachable or swapped for
				// not-ready, counting from the first.
				taints := lifecycleNoExecute(v.node)
				Expect(taints).To(HaveLen(1), "NoExecute taints at %v", v.at)
				Expect(taints[0].TimeAdded.Time).To(BeTemporally("==", added), "a new countdown at %v", v.at)
				continue
			}
			if untaintedAt.IsZero() && len(lifecycleTaints(v.node)) == 0 {
				untaintedAt = v.at
			}
		}
		Expect(readyAt).NotTo(BeZero())
		Expect(untaintedAt).NotTo(BeZero())
		how := "posted Ready=True"
		if saidFalse {
			how = `posted Ready=False, "container runtime is down", at once, and Ready=True`
		}
		AddReportEntry("the kubelet resumed", fmt.Sprintf("frozen %v; %s %v after the resume; untainted %v after that; Ready %s at the window pod's deadline",
			resumed.Sub(frozenAt).Round(time.Millisecond), how, readyAt.Sub(resumed).Round(time.Millisecond),
			untaintedAt.Sub(readyAt).Round(time.Millisecond), readyAtDeadline))
		Expect(untaintedAt.Sub(readyAt)).To(BeNumerically("<", time.Second), "untainted late")
		Expect(getNode(frozen.Name).Spec.Taints).To(BeEmpty())

		By("evicting only the pods whose toleration of the taint in force ran out; the kubelet finishes them")
		Eventually(podGone(gone)).WithTimeout(30 * time.Second).Should(BeTrue())
		if readyAtDeadline == corev1.ConditionFalse {
			// The kubelet said it was not ready past the window pod's
			// toleration, counted from the first taint.
			Eventually(reasonsFrom(podeviction.EventSource, "Pod", window.Name)).
				Should(ContainElement(podeviction.ReasonTaintManagerEviction))
			Eventually(podGone(window)).WithTimeout(30 * time.Second).Should(BeTrue())
		} else {
			Expect(terminating(window)(Default)).To(BeFalse(), "evicted from a kubelet that was back")
		}

		By("the kubelet restoring its pods' readiness, which the controller leaves alone")
		kept := []*corev1.Pod{forever}
		if readyAtDeadline != corev1.ConditionFalse {
			kept = append(kept, window)
		}
		for _, pod := range kept {
			Eventually(podReadyStatus(pod)).WithTimeout(harness.KubeletStatusInterval+5*time.Second).
				Should(Equal(corev1.ConditionTrue), "pod %s", pod.Name)
		}
		Consistently(func(g Gomega) {
			for _, pod := range kept {
				g.Expect(podReadyStatus(pod)(g)).To(Equal(corev1.ConditionTrue), "pod %s", pod.Name)
				g.Expect(terminating(pod)(g)).To(BeFalse(), "pod %s", pod.Name)
			}
			g.Expect(getNode(frozen.Name).Spec.Taints).To(BeEmpty())
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("leaving the live kubelet, its node and its pod alone")
		Expect(readyStatus(live.Name)(Default)).To(HavePrefix("True/"))
		Expect(getNode(live.Name).Spec.Taints).To(BeEmpty())
		Expect(podReadyStatus(stays)(Default)).To(Equal(corev1.ConditionTrue))
		Expect(markedBy(stays)(Default)).To(BeEmpty())
	})
})
