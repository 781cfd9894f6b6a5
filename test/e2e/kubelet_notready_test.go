package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// refuseCSINode makes the apiserver refuse to create the CSINode of a node,
// as a validating admission policy of the cluster's might. It returns the
// function that lifts the refusal, which the spec's end calls too.
func refuseCSINode(node string) (lift func()) {
	name := "refuse-csinode-" + rand.String(5)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{storagev1.GroupName}, APIVersions: []string{"v1"},
						Resources: []string{"csinodes"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.metadata.name != '" + node + "'", Message: "refused by the suite's policy",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	ctx := context.Background()
	Expect(k8s.Create(ctx, policy)).To(Succeed())
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	lift = func() {
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), binding))).To(Succeed())
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), policy))).To(Succeed())
	}
	DeferCleanup(lift)
	probe := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}}}
	Eventually(func() error { return k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).
		Should(MatchError(ContainSubstring("refused by the suite's policy")))
	return lift
}

var _ = Describe("A real kubelet that says it is not ready", Label("kubelet"), func() {
	// kubemark's fake runtime always answers ready, and its flags set no
	// threshold that would turn a condition. What does turn Ready False in
	// a live hollow kubelet is its CSINode: from its start, the kubelet
	// posts Ready=False, "CSINode is not yet initialized", until it has
	// created it, trying at about 0, 0.3, 0.9, 3 and 19s (a backoff over
	// 140s, after which it exits).
	It("taints a live kubelet that posts Ready=False not-ready, never unreachable, leaves its pods' readiness to it, evicts the pod whose toleration runs out, and untaints it once it posts Ready", func() {
		zone := "zone-" + newNodeName()
		kubelets := startHollowKubelets(zone, newNodeName(), newNodeName())
		live, sick := kubelets[0], kubelets[1]
		liveBeats, sickBeats := watchHeartbeats(live.Name), watchHeartbeats(sick.Name)
		history := recordNodes(harness.LabelZone + "=" + zone)
		startController(kubeletTimings)
		started := []int{liveBeats.renewalCount(), sickBeats.renewalCount()}

		short := createKubeletPod(sick.Name+"-short", sick.Name, tolerateNotReady(ptr.To[int64](2)))
		forever := createKubeletPod(sick.Name+"-forever", sick.Name, tolerateNotReady(nil))
		stays := createKubeletPod(live.Name+"-stays", live.Name)
		for _, pod := range []*corev1.Pod{short, forever, stays} {
			Eventually(podReadyStatus(pod)).WithTimeout(time.Minute).Should(Equal(corev1.ConditionTrue), "pod %s", pod.Name)
		}
		// Until the controller has heard each node since it started, it
		// adds no NoExecute taint.
		Eventually(liveBeats.renewalCount).WithTimeout(2 * harness.KubeletLeaseRenewInterval).Should(BeNumerically(">", started[0]))
		Eventually(sickBeats.renewalCount).WithTimeout(2 * harness.KubeletLeaseRenewInterval).Should(BeNumerically(">", started[1]))

		By("restarting the kubelet while the apiserver refuses its CSINode: it posts Ready=False, and heartbeats all along")
		lift := refuseCSINode(sick.Name)
		Expect(k8s.Delete(context.Background(), &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: sick.Name}})).To(Succeed())
		Expect(sick.Restart(context.Background())).To(Succeed())
		restarted := time.Now()
		Eventually(readyStatus(sick.Name)).WithTimeout(5 * time.Second).Should(Equal("False/KubeletNotReady"))
		Expect(condition(getNode(sick.Name), corev1.NodeReady).Message).To(ContainSubstring("CSINode"))

		By("tainting it not-ready, NoSchedule and NoExecute, and evicting the pod that tolerates that for 2s; the kubelet finishes it")
		Eventually(noScheduleTaints(sick.Name)).Should(ConsistOf(corev1.TaintNodeNotReady))
		added := noExecuteAdded(sick.Name, corev1.TaintNodeNotReady)
		Expect(added).To(BeTemporally("<", restarted.Add(3*time.Second)), "tainted NoExecute late")
		Eventually(podGone(short)).WithTimeout(time.Until(added.Add(10 * time.Second))).Should(BeTrue())
		Expect(reasonsFrom(podeviction.EventSource, "Pod", short.Name)(Default)).To(ContainElement(podeviction.ReasonTaintManagerEviction))

		By("lifting the refusal before the kubelet's try at about 19s")
		Expect(time.Since(restarted)).To(BeNumerically("<", 15*time.Second),
			"too late to lift the refusal: the kubelet would try again only at about 140s, and then exit")
		lift()

		By("untainting it once it has created its CSINode and posts Ready=True")
		// Its next try is at about 3s or 19s after its start (the first may
		// have passed by now), and its status check up to 10s after that.
		Eventually(readyStatus(sick.Name)).WithTimeout(25*time.Second + harness.KubeletStatusInterval).Should(HavePrefix("True/"))
		readyAt := time.Now()
		Eventually(func() []corev1.Taint { return getNode(sick.Name).Spec.Taints }).WithTimeout(time.Second).Should(BeEmpty())
		AddReportEntry("the kubelet not ready", fmt.Sprintf("tainted NoExecute %v after the restart, Ready=True %v after it",
			added.Sub(restarted).Round(time.Second), readyAt.Sub(restarted).Round(time.Millisecond)))

		By("never finding it silent: never Unknown, never unreachable, its pods' readiness left to the kubelet")
		for _, v := range history.of(sick.Name) {
			Expect(condition(v.node, corev1.NodeReady).Status).NotTo(Equal(corev1.ConditionUnknown), "at %v", v.at)
			for _, t := range v.node.Spec.Taints {
				Expect(t.Key).NotTo(Equal(corev1.TaintNodeUnreachable), "at %v", v.at)
			}
		}
		Expect(podReadyStatus(forever)(Default)).To(Equal(corev1.ConditionTrue))
		Expect(terminating(forever)(Default)).To(BeFalse())
		for _, pod := range []*corev1.Pod{short, forever, stays} {
			Expect(markedBy(pod)(Default)).To(BeEmpty(), "pod %s marked NotReady", pod.Name)
		}

		By("leaving the live kubelet, its node and its pod alone")
		Expect(readyStatus(live.Name)(Default)).To(HavePrefix("True/"))
		Expect(getNode(live.Name).Spec.Taints).To(BeEmpty())
		Expect(podReadyStatus(stays)(Default)).To(Equal(corev1.ConditionTrue))
	})
})
