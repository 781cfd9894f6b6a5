package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// inMaintenance sets the condition True on the nodes, as an administrator
// or a maintenance operator does before a reboot.
func inMaintenance(f *fleet.Fleet, t corev1.NodeConditionType, nodes ...string) {
	GinkgoHelper()
	for _, n := range nodes {
		Expect(f.SetCondition(context.Background(), n, corev1.NodeCondition{Type: t, Status: corev1.ConditionTrue,
			Reason: "E2E", Message: "planned"})).To(Succeed())
	}
}

// patchMaintenance declares the node in maintenance with the strategic
// merge patch of the node's status that the kubectl example of
// docs/concepts.md sends.
func patchMaintenance(node string) {
	GinkgoHelper()
	now := time.Now().UTC().Format(time.RFC3339)
	body := `{"status":{"conditions":[
    {"type":"MaintenanceInProgress","status":"True","reason":"KernelUpgrade","message":"rebooting into 6.12",
     "lastTransitionTime":"` + now + `","lastHeartbeatTime":"` + now + `"}]}}`
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	Expect(k8s.Status().Patch(context.Background(), n, client.RawPatch(types.StrategicMergePatchType, []byte(body)))).To(Succeed())
}

// lifecycleNoExecuteOn lists the node's lifecycle NoExecute taints.
func lifecycleNoExecuteOn(node string) func() []corev1.Taint {
	return func() []corev1.Taint { return lifecycleNoExecute(getNode(node)) }
}

// heldSilent checks, for d, that the node stays marked Unknown and tainted
// NoSchedule, and that neither a NoExecute taint nor a deletion of its pod
// comes.
func heldSilent(node string, d time.Duration) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		g.Expect(readyStatus(node)(g)).To(Equal(markedUnknown))
		g.Expect(noScheduleTaints(node)(g)).To(ContainElement(corev1.TaintNodeUnreachable))
		g.Expect(lifecycleNoExecute(getNode(node))).To(BeEmpty(), "node %s in maintenance tainted NoExecute", node)
		g.Expect(deleted(fleetPod(node))(g)).To(BeFalse(), "the pod of %s, in maintenance, deleted", node)
	}).WithTimeout(d).WithPolling(100 * time.Millisecond).Should(Succeed())
}

var _ = Describe("Maintenance", func() {
	It("marks a node in maintenance that goes silent and its pods, holds its NoExecute taint for the maintenance grace, and evicts once a maintenance that never ends runs out of it", Label("compat"), func() {
		const maintenanceGrace = 8 * time.Second
		startController(freezeOff, func(o *options.Options) { o.MaintenanceGracePeriod = maintenanceGrace })
		f := startFleet(3, 1, func(o *fleet.Options) { o.Region = "mg-" + rand.String(5) })
		allReady(f)
		node := f.Nodes()[0]
		heldBefore := metricSum("node_lifecycle_maintenance_held_nodes")

		By("MaintenanceInProgress set, then the node going silent")
		inMaintenance(f, corev1.NodeMaintenanceInProgress, node)
		f.Stop(node)
		marked := markedAt(node, grace+5*time.Second)
		Eventually(podReadyStatus(fleetPod(node))).Should(Equal(corev1.ConditionFalse))
		Eventually(eventReasons(node)).Should(ContainElement(nodehealth.ReasonMaintenanceHold))
		Eventually(func() float64 { return metricSum("node_lifecycle_maintenance_held_nodes") - heldBefore }).Should(Equal(1.0))

		By("no NoExecute taint and no eviction within the maintenance grace")
		heldSilent(node, time.Until(marked.Add(maintenanceGrace-2*time.Second)))

		By("the maintenance never ending: tainted at the grace's end, its pod evicted after the eviction timeout")
		Eventually(lifecycleNoExecuteOn(node)).WithTimeout(maintenanceGrace + 5*time.Second).ShouldNot(BeEmpty())
		// The grace counts from the mark, which the apiserver keeps in
		// whole seconds, as it keeps the taint's time.
		Expect(noExecuteAdded(node, corev1.TaintNodeUnreachable)).To(BeTemporally(">=", marked.Add(maintenanceGrace)))
		Eventually(eventReasons(node)).Should(ContainElement(nodehealth.ReasonMaintenanceHoldEnded))
		Eventually(deleted(fleetPod(node))).WithTimeout(evictTimeout + 10*time.Second).Should(BeTrue())
		Expect(metricSum("node_lifecycle_maintenance_held_nodes") - heldBefore).To(BeZero())
	})

	It("does not count nodes in maintenance towards the partition freeze, the pool's breaker or the zone's state, with the grace from the pool's policy", func() {
		id := rand.String(5)
		pool := "mp-" + id
		started := time.Now()
		// The flag turns the hold off; the policy turns it on for its pool.
		startController(func(o *options.Options) { o.MaintenanceGracePeriod = 0 })
		f := startFleet(6, 1, func(o *fleet.Options) { o.Region = "mp-" + id })
		nodes := f.Nodes()
		createPolicy(pool, v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting(pool),
			MaintenanceGracePeriod: &metav1.Duration{Duration: time.Hour}, MaxUnhealthy: ptr.To(intstr.FromInt32(1))})
		labelPool(pool, nodes...)
		Eventually(policyCounts(pool)).Should(Equal([]int32{6, 6, 0}))
		allReady(f)
		maint, dead := nodes[:4], nodes[4]

		By("four of six nodes going silent for maintenance, and a fifth dying at the same moment")
		inMaintenance(f, corev1.NodeGracefulNodeShutdownInProgress, maint...)
		f.Stop(append([]string{dead}, maint...)...)
		for _, n := range maint {
			markedAt(n, grace+5*time.Second)
		}
		markedAt(dead, grace+5*time.Second)

		By("the dead node tainted and its pod evicted; the nodes in maintenance held; no freeze, no breaker")
		noExecuteAdded(dead, corev1.TaintNodeUnreachable)
		Eventually(deleted(fleetPod(dead))).WithTimeout(evictTimeout + 10*time.Second).Should(BeTrue())
		for _, n := range maint {
			heldSilent(n, 100*time.Millisecond)
		}
		// The policy's nodes are what the cluster shows; its zone counts
		// only the dead node and the live one.
		Expect(policyCounts(pool)(Default)).To(Equal([]int32{6, 1, 5}))
		Eventually(func(g Gomega) []v1alpha1.ZoneStatus { return getPolicy(pool)(g).Status.Zones }).Should(
			ConsistOf(HaveField("Nodes", BeEquivalentTo(2))))
		Expect(getPolicy(pool)(Default).Status.Zones[0]).To(And(HaveField("Unhealthy", BeEquivalentTo(1)), HaveField("State", "Normal")))
		Expect(policyCondition(pool, v1alpha1.ConditionEvictionAllowed)(Default)).To(HavePrefix("True/"))
		Expect(freezeEventsSince(started)(Default)).NotTo(ContainElement(nodehealth.ReasonPartitionFreeze))

		By("the maintenance over and the nodes back: Ready, untainted, their pods there")
		for _, n := range maint {
			Expect(f.ClearCondition(context.Background(), n, corev1.NodeGracefulNodeShutdownInProgress)).To(Succeed())
		}
		f.Resume(maint...)
		Eventually(func(g Gomega) {
			for _, n := range maint {
				g.Expect(readyStatus(n)(g)).To(HavePrefix("True/"))
				g.Expect(getNode(n).Spec.Taints).To(BeEmpty())
				g.Expect(deleted(fleetPod(n))(g)).To(BeFalse())
			}
		}).WithTimeout(grace + 10*time.Second).Should(Succeed())
	})
})

var _ = Describe("Maintenance across a restart", Label("faults"), func() {
	It("keeps holding a node in maintenance when the leader is SIGKILLed, and resumes the normal timeline from the moment its maintenance ends", func() {
		id := rand.String(5)
		leaseName := "nlc-maintenance-" + id
		f := startFleet(3, 1, func(o *fleet.Options) { o.Region = "mr-" + id })
		leader := startControllerProcess("a-"+id, leaseName, "--maintenance-grace-period=1h", "--partition-freeze-threshold=0")
		Eventually(leaderLease(leaseName)).Should(HaveField("HolderIdentity", Not(BeNil())))
		allReady(f)
		node := f.Nodes()[0]

		By("a node going silent, then declared in maintenance")
		f.Stop(node)
		marked := markedAt(node, grace+5*time.Second)
		patchMaintenance(node)
		declared := time.Now()
		Eventually(eventReasons(node)).Should(ContainElement(nodehealth.ReasonMaintenanceHold))

		By("the leader SIGKILLed, and a new process taking over from the cluster alone")
		leader.Kill()
		startControllerProcess("b-"+id, leaseName, "--maintenance-grace-period=1h", "--partition-freeze-threshold=0")
		heldSilent(node, leaseDuration+grace+evictTimeout+2*time.Second)

		By("the maintenance over and the node not back: tainted from then, with what its countdown served before, and its pod evicted")
		ended := time.Now()
		Expect(f.ClearCondition(context.Background(), node, corev1.NodeMaintenanceInProgress)).To(Succeed())
		// It may have been tainted in the moment between its mark and its
		// maintenance: that time counts, and no more.
		Expect(noExecuteAdded(node, corev1.TaintNodeUnreachable)).To(BeTemporally(">=", ended.Add(-declared.Sub(marked)).Add(-time.Second).Truncate(time.Second)))
		Eventually(deleted(fleetPod(node))).WithTimeout(evictTimeout + 10*time.Second).Should(BeTrue())
	})
})
