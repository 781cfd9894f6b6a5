package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// refuse makes the apiserver refuse the requests to a core resource, for an
// operation, that a CEL expression does not allow, as a validating webhook
// or policy of the cluster's might; probe sends one such request in dry
// run, to wait until the policy is in force. It is lifted when the spec
// ends.
func refuse(resource string, op admissionregistrationv1.OperationType, allow string, probe func() error) {
	name := "refuse-" + rand.String(5)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{op},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: allow, Message: "refused by the suite's policy"}},
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
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), binding))).To(Succeed())
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), policy))).To(Succeed())
	})
	Eventually(probe).Should(MatchError(ContainSubstring("refused by the suite's policy")))
}

var _ = Describe("Refused writes", Label("faults"), func() {
	It("taints the rest of a zone at the zone's rate while one node's NoExecute taint is refused", func() {
		// One NoExecute taint every five seconds.
		const rate = 0.2
		startController(freezeOff, func(o *options.Options) { o.NodeEvictionRate = rate })
		zone := "refused-" + rand.String(4)
		// Four live nodes keep the zone normal with two dead.
		live, _ := zoneOf(zone, 4)
		refused, failRefused := failingNode()
		other, failOther := failingNode()
		for _, n := range []string{refused, other} {
			inZone(n, zone)
		}
		Eventually(nodesReadyAndUntainted(append(live, refused, other)...)).Should(Succeed())
		refuse("nodes", admissionregistrationv1.Update,
			"object.metadata.name != '"+refused+"' || !has(object.spec.taints) || "+
				"!object.spec.taints.exists(t, t.key == 'node.kubernetes.io/unreachable' && t.effect == 'NoExecute')",
			func() error {
				n := getNode(refused)
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
				return k8s.Update(context.Background(), n, client.DryRunAll)
			})

		By("one node dying whose NoExecute taint the apiserver refuses")
		failRefused()
		Eventually(readyStatus(refused)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		// Long enough for its taint to be refused a few times.
		Consistently(func() bool { return hasNoExecuteTaint(refused) }).WithTimeout(2 * time.Second).Should(BeFalse())

		By("another node of the zone dying: tainted at once, as the zone's rate allows")
		failOther()
		marked := markedAt(other, grace+5*time.Second)
		added := noExecuteAdded(other, corev1.TaintNodeUnreachable)
		Expect(added.Sub(marked)).To(BeNumerically("<=", 2*time.Second),
			"the refused node spent the zone's tokens: tainted %v after its mark", added.Sub(marked))
	})

	It("evicts a node's other pods at their deadlines while one pod's deletion is refused", func() {
		const later = 12 * time.Second
		startController()
		liveNode()
		node, fail := failingNode()
		stuck := createPod("stuck-"+rand.String(5), node, tolerateUnreachable(ptr.To[int64](0)))
		next := createPod("next-"+rand.String(5), node, tolerateUnreachable(ptr.To(int64(later/time.Second))))
		refuse("pods", admissionregistrationv1.Delete, "oldObject.metadata.name != '"+stuck.Name+"'", func() error {
			return k8s.Delete(context.Background(), stuck.DeepCopy(), client.DryRunAll)
		})

		By("the node dying: its first pod's deletion refused again and again")
		fail()
		added := noExecuteAdded(node, corev1.TaintNodeUnreachable)
		Consistently(deleted(stuck)).WithTimeout(2 * time.Second).Should(BeFalse())

		By("the other pod going at its own deadline all the same")
		due := added.Add(later)
		Eventually(deleted(next)).WithTimeout(time.Until(due)+3*time.Second).Should(BeTrue(),
			"the pod due at %v was held by its neighbour's failures", due)
		Expect(deleted(stuck)(Default)).To(BeFalse())
	})
})
