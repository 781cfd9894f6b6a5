package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// poolLabel puts a node in a pool; each spec uses values of its own, so that
// no policy selects another spec's nodes.
const poolLabel = "e2e.nodelifecycle.io/pool"

// markEarly and markLate bound how far a mark's Ready lastTransitionTime can
// lie from a deadline counted from the moment the test stopped the node: the
// node's last renewal can precede the stop by a renewal interval (500ms), and
// the condition's time is a stamp the apiserver's clock has surely not
// reached when the node is marked, rounded up to the whole second an API
// timestamp keeps, so it can lie up to a second and the clock estimate's
// uncertainty after the moment of marking.
const (
	markEarly = 2 * time.Second
	markLate  = 2 * time.Second
)

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// selecting returns a selector of the nodes labeled into the pool.
func selecting(pool string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: pool}}
}

// createPolicy creates a NodeHealthPolicy that is deleted when the spec ends.
func createPolicy(name string, spec v1alpha1.NodeHealthPolicySpec) *v1alpha1.NodeHealthPolicy {
	p := &v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	Expect(k8s.Create(context.Background(), p)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), p))).To(Succeed())
	})
	return p
}

func getPolicy(name string) func(g Gomega) *v1alpha1.NodeHealthPolicy {
	return func(g Gomega) *v1alpha1.NodeHealthPolicy {
		p := &v1alpha1.NodeHealthPolicy{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, p)).To(Succeed())
		return p
	}
}

// updatePolicy changes a policy's spec, retrying on conflicts with status
// writes, and returns its new generation.
func updatePolicy(name string, change func(*v1alpha1.NodeHealthPolicySpec)) int64 {
	var generation int64
	Eventually(func(g Gomega) {
		p := getPolicy(name)(g)
		change(&p.Spec)
		g.Expect(k8s.Update(context.Background(), p)).To(Succeed())
		generation = p.Generation
	}).Should(Succeed())
	return generation
}

// policyCondition reads a policy's condition as "Status/Reason".
func policyCondition(name, typ string) func(g Gomega) string {
	return func(g Gomega) string {
		c := meta.FindStatusCondition(getPolicy(name)(g).Status.Conditions, typ)
		if c == nil {
			return "<none>"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// policyCounts reads a policy's node counts as {nodes, healthy, unhealthy}.
func policyCounts(name string) func(g Gomega) []int32 {
	return func(g Gomega) []int32 {
		st := getPolicy(name)(g).Status
		return []int32{st.Nodes, st.HealthyNodes, st.UnhealthyNodes}
	}
}

// warningsOn lists the reasons of the Warning events regarding a policy.
func warningsOn(name string) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "NodeHealthPolicy" && e.Regarding.Name == name && e.Type == corev1.EventTypeWarning {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// labelPool puts the nodes in a pool, or with pool "" takes them out of any.
func labelPool(pool string, nodes ...string) {
	for _, n := range nodes {
		Eventually(func() error {
			node := getNode(n)
			if pool == "" {
				delete(node.Labels, poolLabel)
			} else {
				node.Labels[poolLabel] = pool
			}
			return k8s.Update(context.Background(), node)
		}).Should(Succeed())
	}
}

// fleetPod returns the pod the fleet bound to the node.
func fleetPod(node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: node + "-pod-0"}}
}

// markedAt waits for the node to be marked Unknown and returns when the
// controller marked it: its Ready condition's transition time, in whole
// seconds.
func markedAt(node string, within time.Duration) time.Time {
	Eventually(readyStatus(node)).WithTimeout(within).Should(Equal(markedUnknown))
	return condition(getNode(node), corev1.NodeReady).LastTransitionTime.Time
}

// expectMarkedAt checks that a mark fell at the deadline the node's pool
// gives it: grace after the test stopped its heartbeats.
func expectMarkedAt(mark, stopped time.Time, grace time.Duration) {
	GinkgoHelper()
	Expect(mark).To(BeTemporally(">=", stopped.Add(grace-markEarly)), "marked before its grace of %v", grace)
	Expect(mark).To(BeTemporally("<=", stopped.Add(grace+markLate)), "marked late for its grace of %v", grace)
}

// unreachableAdded waits for the node's unreachable NoExecute taint and
// returns its timeAdded, the moment its pods' eviction deadlines count from.
func unreachableAdded(node string) time.Time {
	var added *metav1.Time
	Eventually(func(g Gomega) {
		for _, t := range getNode(node).Spec.Taints {
			if t.Key == unreachableTaint && t.Effect == corev1.TaintEffectNoExecute {
				added = t.TimeAdded
			}
		}
		g.Expect(added).NotTo(BeNil(), "no timed unreachable NoExecute taint on %s", node)
	}).WithTimeout(grace + 5*time.Second).Should(Succeed())
	return added.Time
}

// allReady waits until every node of the fleet is Ready and untainted.
func allReady(f *fleet.Fleet) {
	Eventually(func(g Gomega) {
		for _, n := range f.Nodes() {
			g.Expect(readyStatus(n)(g)).To(HavePrefix("True/"))
			g.Expect(getNode(n).Spec.Taints).To(BeEmpty())
		}
	}).Should(Succeed())
}

var _ = Describe("NodeHealthPolicy", func() {
	var id string
	BeforeEach(func() {
		id = rand.String(5)
		// None of these specs is about the partition freeze, which would
		// otherwise catch several of a small cluster's nodes going silent.
		startController(freezeOff)
	})

	It("marks each pool's nodes Unknown at its own grace period", func() {
		const graceA, graceB = 2 * time.Second, 6 * time.Second
		f := startFleet(4, 1)
		nodes := f.Nodes()
		a := createPolicy("a-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:           selecting("a-" + id),
			NodeMonitorGracePeriod: duration(graceA),
			PodEvictionTimeout:     duration(10 * time.Second),
		})
		b := createPolicy("b-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:           selecting("b-" + id),
			NodeMonitorGracePeriod: duration(graceB),
			NodeStartupGracePeriod: duration(graceB),
			PodEvictionTimeout:     duration(30 * time.Second),
		})
		labelPool("a-"+id, nodes[0], nodes[1])
		labelPool("b-"+id, nodes[2], nodes[3])
		Eventually(policyCounts(a.Name)).Should(Equal([]int32{2, 2, 0}))
		Eventually(policyCounts(b.Name)).Should(Equal([]int32{2, 2, 0}))
		allReady(f)

		By("stopping one node of each pool at the same moment")
		inA, inB := nodes[0], nodes[2]
		stopped := time.Now()
		f.Stop(inA, inB)

		markA := markedAt(inA, graceA+5*time.Second)
		Expect(readyStatus(inB)(Default)).To(HavePrefix("True/"), "B's node is still within its grace when A's is marked")
		markB := markedAt(inB, graceB+5*time.Second)
		GinkgoWriter.Printf("marked %v (grace %v) and %v (grace %v) after the stop, by condition times in whole seconds\n",
			markA.Sub(stopped).Round(time.Millisecond), graceA, markB.Sub(stopped).Round(time.Millisecond), graceB)
		expectMarkedAt(markA, stopped, graceA)
		expectMarkedAt(markB, stopped, graceB)

		By("the other nodes of both pools staying Ready")
		Expect(readyStatus(nodes[1])(Default)).To(HavePrefix("True/"))
		Expect(readyStatus(nodes[3])(Default)).To(HavePrefix("True/"))
	})

	It("holds every node of a pool when more than maxUnhealthy fail together, the first to expire included", func() {
		f := startFleet(3, 1)
		nodes := f.Nodes()
		x := createPolicy("x-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector: selecting("x-" + id),
			MaxUnhealthy: ptr.To(intstr.FromInt32(1)),
		})
		labelPool("x-"+id, nodes...)
		Eventually(policyCounts(x.Name)).Should(Equal([]int32{3, 3, 0}))
		allReady(f)

		By("two of its three nodes failing at the same moment")
		f.Stop(nodes[0], nodes[1])
		Eventually(readyStatus(nodes[0])).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(readyStatus(nodes[1])).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(policyCondition(x.Name, v1alpha1.ConditionEvictionAllowed)).Should(Equal("False/" + v1alpha1.ReasonTooManyUnhealthy))
		Consistently(func(g Gomega) {
			g.Expect(hasNoExecuteTaint(nodes[0])).To(BeFalse(), "the first failed node is not tainted NoExecute")
			g.Expect(hasNoExecuteTaint(nodes[1])).To(BeFalse(), "the second failed node is not tainted NoExecute")
		}).WithTimeout(2 * time.Second).Should(Succeed())

		By("one of them coming back: the other is within maxUnhealthy and is tainted")
		f.Resume(nodes[0])
		Eventually(func() bool { return hasNoExecuteTaint(nodes[1]) }).WithTimeout(grace + 5*time.Second).Should(BeTrue())
		Expect(hasNoExecuteTaint(nodes[0])).To(BeFalse())
	})

	It("holds a pool's evictions back while more of it is unhealthy than maxUnhealthy, beside a pool that evicts", func() {
		const timeoutX, timeoutY = 8 * time.Second, 3 * time.Second
		f := startFleet(6, 1)
		nodes := f.Nodes()
		x := createPolicy("x-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:       selecting("x-" + id),
			MaxUnhealthy:       ptr.To(intstr.FromInt32(1)),
			PodEvictionTimeout: duration(timeoutX),
		})
		y := createPolicy("y-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:       selecting("y-" + id),
			PodEvictionTimeout: duration(timeoutY),
		})
		labelPool("x-"+id, nodes[:3]...)
		labelPool("y-"+id, nodes[3:]...)
		Eventually(policyCounts(x.Name)).Should(Equal([]int32{3, 3, 0}))
		Eventually(policyCounts(y.Name)).Should(Equal([]int32{3, 3, 0}))
		Eventually(policyCondition(x.Name, v1alpha1.ConditionEvictionAllowed)).Should(Equal("True/" + v1alpha1.ReasonAllowed))
		allReady(f)
		x1, x2, y1 := nodes[0], nodes[1], nodes[3]

		By("one node of each pool failing, within maxUnhealthy: both tainted")
		// X's first node fails on its own, within maxUnhealthy; failing
		// together, both would be held (the next spec).
		f.Stop(x1, y1)
		x1Added := unreachableAdded(x1)
		yAdded := unreachableAdded(y1)

		By("a second node of X failing: the breaker trips")
		f.Stop(x2)
		Eventually(policyCondition(x.Name, v1alpha1.ConditionEvictionAllowed)).WithTimeout(grace + 5*time.Second).
			Should(Equal("False/" + v1alpha1.ReasonTooManyUnhealthy))
		Eventually(readyStatus(x2)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(policyCounts(x.Name)).Should(Equal([]int32{3, 1, 2}))
		Eventually(warningsOn(x.Name)).Should(ContainElement(nodehealthpolicy.ReasonEvictionBlocked))
		Expect(time.Now()).To(BeTemporally("<", x1Added.Add(timeoutX)), "the breaker tripped before the first node's pod was due")

		By("Y evicting its failed node's pod while X holds both of its own past their deadline, untainted")
		Eventually(deleted(fleetPod(y1))).WithTimeout(time.Until(yAdded.Add(timeoutY)) + 5*time.Second).Should(BeTrue())
		Expect(policyCondition(y.Name, v1alpha1.ConditionEvictionAllowed)(Default)).To(Equal("True/" + v1alpha1.ReasonAllowed))
		Eventually(func() bool { return hasNoExecuteTaint(x1) }).Should(BeFalse(), "the held node kept its NoExecute taint")
		Consistently(func(g Gomega) {
			g.Expect(hasNoExecuteTaint(x1)).To(BeFalse(), "X's first failed node is tainted NoExecute again while held")
			g.Expect(hasNoExecuteTaint(x2)).To(BeFalse(), "X's second failed node is tainted NoExecute")
			g.Expect(deleted(fleetPod(x1))(g)).To(BeFalse(), "the pod of X's first failed node is evicted")
			g.Expect(deleted(fleetPod(x2))(g)).To(BeFalse(), "the pod of X's second failed node is evicted")
			g.Expect(podReadyStatus(fleetPod(x2))(g)).To(Equal(corev1.ConditionTrue), "a held pod is marked NotReady")
		}).WithTimeout(time.Until(x1Added.Add(timeoutX)) + 2*time.Second).Should(Succeed())

		By("X's first node coming back: the breaker resets, and the held node is tainted with a fresh countdown")
		f.Resume(x1)
		Eventually(policyCondition(x.Name, v1alpha1.ConditionEvictionAllowed)).Should(Equal("True/" + v1alpha1.ReasonAllowed))
		Eventually(func() []corev1.Taint { return getNode(x1).Spec.Taints }).Should(BeEmpty())
		unreachableAdded(x2)
		// Its pod's deadline passed while the breaker held it; the node is
		// healthy again, so it stays.
		Consistently(deleted(fleetPod(x1))).WithTimeout(2 * time.Second).Should(BeFalse())

		By("X's second node coming back too, before its pod's deadline")
		f.Resume(x2)
		Eventually(policyCounts(x.Name)).Should(Equal([]int32{3, 3, 0}))
		Eventually(func() []corev1.Taint { return getNode(x2).Spec.Taints }).Should(BeEmpty())
		Expect(deleted(fleetPod(x2))(Default)).To(BeFalse())
		Expect(policyCondition(x.Name, v1alpha1.ConditionEvictionAllowed)(Default)).To(Equal("True/" + v1alpha1.ReasonAllowed))
	})

	It("keeps a paused pool's nodes judged but untainted NoExecute, and taints them once the pause is lifted", func() {
		const timeout = 3 * time.Second
		f := startFleet(3, 1)
		nodes := f.Nodes()
		p := createPolicy("p-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:       selecting("p-" + id),
			PodEvictionTimeout: duration(timeout),
			PauseRequests:      []string{"maintenance"},
		})
		labelPool("p-"+id, nodes...)
		Eventually(policyCounts(p.Name)).Should(Equal([]int32{3, 3, 0}))
		Eventually(policyCondition(p.Name, v1alpha1.ConditionEvictionAllowed)).Should(Equal("False/" + v1alpha1.ReasonPaused))
		Expect(meta.FindStatusCondition(getPolicy(p.Name)(Default).Status.Conditions, v1alpha1.ConditionEvictionAllowed).Message).
			To(ContainSubstring("maintenance"))
		allReady(f)

		By("a node of the paused pool failing: marked Unknown and tainted NoSchedule, its pod left Ready")
		dead := nodes[0]
		f.Stop(dead)
		marked := markedAt(dead, grace+5*time.Second)
		Eventually(noScheduleTaints(dead)).Should(ConsistOf(unreachableTaint))
		Expect(podReadyStatus(fleetPod(dead))(Default)).To(Equal(corev1.ConditionTrue))

		By("no NoExecute taint and no eviction while paused, past the pod's timeout")
		Consistently(func(g Gomega) {
			g.Expect(hasNoExecuteTaint(dead)).To(BeFalse())
			g.Expect(deleted(fleetPod(dead))(g)).To(BeFalse())
		}).WithTimeout(time.Until(marked.Add(timeout)) + 2*time.Second).Should(Succeed())
		Expect(readyStatus(dead)(Default)).To(Equal(markedUnknown))

		By("lifting the pause: the node is tainted, its pod marked NotReady and evicted, without a restart")
		updatePolicy(p.Name, func(s *v1alpha1.NodeHealthPolicySpec) { s.PauseRequests = nil })
		added := unreachableAdded(dead)
		Eventually(podReadyStatus(fleetPod(dead))).Should(Equal(corev1.ConditionFalse))
		Eventually(policyCondition(p.Name, v1alpha1.ConditionEvictionAllowed)).Should(Equal("True/" + v1alpha1.ReasonAllowed))
		Eventually(deleted(fleetPod(dead))).WithTimeout(time.Until(added.Add(timeout)) + 5*time.Second).Should(BeTrue())
		for _, n := range nodes[1:] {
			Expect(hasNoExecuteTaint(n)).To(BeFalse())
		}
	})

	It("gives a node two policies select to the older one, and to the younger once the older is gone", func() {
		const graceOlder, graceYounger = 2 * time.Second, 6 * time.Second
		f := startFleet(2, 1)
		node := f.Nodes()[0]
		// Named so that the younger comes first by name: only age makes the
		// older one win.
		older := createPolicy("zz-older-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:           selecting("o-" + id),
			NodeMonitorGracePeriod: duration(graceOlder),
			PodEvictionTimeout:     duration(10 * time.Second),
		})
		// Creation times are stored in whole seconds.
		Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).
			Should(BeTemporally(">", older.CreationTimestamp.Time))
		younger := createPolicy("aa-younger-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:           selecting("o-" + id),
			NodeMonitorGracePeriod: duration(graceYounger),
			NodeStartupGracePeriod: duration(graceYounger),
			PodEvictionTimeout:     duration(30 * time.Second),
		})
		Expect(younger.CreationTimestamp.Time).To(BeTemporally(">", older.CreationTimestamp.Time))
		labelPool("o-"+id, node)

		By("the older policy holding the node, the younger reporting the overlap")
		Eventually(policyCounts(older.Name)).Should(Equal([]int32{1, 1, 0}))
		Eventually(policyCondition(younger.Name, v1alpha1.ConditionConflict)).Should(Equal("True/" + v1alpha1.ReasonOverlap))
		Expect(policyCounts(younger.Name)(Default)).To(Equal([]int32{0, 0, 0}))
		Expect(meta.FindStatusCondition(getPolicy(younger.Name)(Default).Status.Conditions, v1alpha1.ConditionConflict).Message).
			To(ContainSubstring("NodeHealthPolicy " + older.Name))
		Eventually(policyCondition(older.Name, v1alpha1.ConditionConflict)).Should(Equal("False/" + v1alpha1.ReasonNoConflict))
		allReady(f)

		By("the node failing at the older policy's grace")
		stopped := time.Now()
		f.Stop(node)
		expectMarkedAt(markedAt(node, graceOlder+5*time.Second), stopped, graceOlder)
		f.Resume(node)
		Eventually(readyStatus(node)).Should(HavePrefix("True/"))

		By("deleting the older policy: the node follows the younger")
		Expect(k8s.Delete(context.Background(), older)).To(Succeed())
		Eventually(policyCondition(younger.Name, v1alpha1.ConditionConflict)).Should(Equal("False/" + v1alpha1.ReasonNoConflict))
		Eventually(policyCounts(younger.Name)).Should(Equal([]int32{1, 1, 0}))
		allReady(f)
		stopped = time.Now()
		f.Stop(node)
		expectMarkedAt(markedAt(node, graceYounger+5*time.Second), stopped, graceYounger)
	})

	It("reports its pool's counts, zones and observed generation as nodes fail, recover and leave", func() {
		f := startFleet(4, 2)
		nodes := f.Nodes()
		p := createPolicy("s-"+id, v1alpha1.NodeHealthPolicySpec{NodeSelector: selecting("s-" + id)})
		labelPool("s-"+id, nodes...)
		zoneA, zoneB := "fleet/"+f.Zone(nodes[0]), "fleet/"+f.Zone(nodes[1])
		Expect(zoneA).NotTo(Equal(zoneB))
		// Each zone of two nodes stays Normal with one of them down.
		zone := func(name string, size, unhealthy int32) v1alpha1.ZoneStatus {
			return v1alpha1.ZoneStatus{Name: name, State: "Normal", Nodes: size, Unhealthy: unhealthy}
		}
		status := func(g Gomega) v1alpha1.NodeHealthPolicyStatus {
			got := getPolicy(p.Name)(g)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			return got.Status
		}

		By("every node healthy")
		Eventually(status).Should(And(
			HaveField("Nodes", BeEquivalentTo(4)),
			HaveField("HealthyNodes", BeEquivalentTo(4)),
			HaveField("UnhealthyNodes", BeEquivalentTo(0)),
			HaveField("Zones", Equal([]v1alpha1.ZoneStatus{zone(zoneA, 2, 0), zone(zoneB, 2, 0)})),
		))
		for typ, want := range map[string]string{
			nodehealthpolicy.ConditionAccepted: "True/" + nodehealthpolicy.ReasonInForce,
			v1alpha1.ConditionEvictionAllowed:  "True/" + v1alpha1.ReasonAllowed,
			v1alpha1.ConditionConflict:         "False/" + v1alpha1.ReasonNoConflict,
		} {
			Eventually(policyCondition(p.Name, typ)).Should(Equal(want), "condition %s", typ)
		}

		By("a node of zone A failing")
		f.Stop(nodes[0])
		Eventually(status).WithTimeout(grace + 5*time.Second).Should(And(
			HaveField("Nodes", BeEquivalentTo(4)),
			HaveField("HealthyNodes", BeEquivalentTo(3)),
			HaveField("UnhealthyNodes", BeEquivalentTo(1)),
			HaveField("Zones", Equal([]v1alpha1.ZoneStatus{zone(zoneA, 2, 1), zone(zoneB, 2, 0)})),
		))

		By("the node recovering")
		f.Resume(nodes[0])
		Eventually(status).Should(And(
			HaveField("HealthyNodes", BeEquivalentTo(4)),
			HaveField("UnhealthyNodes", BeEquivalentTo(0)),
			HaveField("Zones", Equal([]v1alpha1.ZoneStatus{zone(zoneA, 2, 0), zone(zoneB, 2, 0)})),
		))

		By("a node of zone B leaving the pool")
		labelPool("", nodes[3])
		Eventually(status).Should(And(
			HaveField("Nodes", BeEquivalentTo(3)),
			HaveField("HealthyNodes", BeEquivalentTo(3)),
			HaveField("Zones", Equal([]v1alpha1.ZoneStatus{zone(zoneA, 2, 0), zone(zoneB, 1, 0)})),
		))

		By("a spec change being observed")
		generation := updatePolicy(p.Name, func(s *v1alpha1.NodeHealthPolicySpec) {
			s.NodeMonitorGracePeriod = duration(3 * time.Second)
		})
		Expect(generation).To(BeNumerically(">", 1))
		Eventually(func(g Gomega) int64 { return getPolicy(p.Name)(g).Status.ObservedGeneration }).Should(Equal(generation))
	})

	It("applies a changed grace period to a node already silent, without a restart", func() {
		const before, raised, lowered = 4 * time.Second, 8 * time.Second, 2 * time.Second
		f := startFleet(2, 1)
		node := f.Nodes()[0]
		p := createPolicy("g-"+id, v1alpha1.NodeHealthPolicySpec{
			NodeSelector:           selecting("g-" + id),
			NodeMonitorGracePeriod: duration(before),
			NodeStartupGracePeriod: duration(20 * time.Second),
			PodEvictionTimeout:     duration(30 * time.Second),
		})
		labelPool("g-"+id, node)
		Eventually(policyCounts(p.Name)).Should(Equal([]int32{1, 1, 0}))
		allReady(f)

		By("raising the grace before the node's deadline: it is marked at the new deadline")
		stopped := time.Now()
		f.Stop(node)
		updatePolicy(p.Name, func(s *v1alpha1.NodeHealthPolicySpec) { s.NodeMonitorGracePeriod = duration(raised) })
		Expect(time.Since(stopped)).To(BeNumerically("<", before-markEarly), "the grace was raised well before the old deadline")
		mark := markedAt(node, raised+5*time.Second)
		GinkgoWriter.Printf("marked %v after the stop, with the grace raised from %v to %v, by the condition time in whole seconds\n",
			mark.Sub(stopped).Round(time.Millisecond), before, raised)
		expectMarkedAt(mark, stopped, raised)

		By("lowering the grace below the time the node has been silent: it is marked at once")
		f.Resume(node)
		Eventually(readyStatus(node)).Should(HavePrefix("True/"))
		stopped = time.Now()
		f.Stop(node)
		// Silent for well past the grace about to be set, and still Ready.
		Consistently(readyStatus(node)).WithTimeout(lowered + 1500*time.Millisecond).Should(HavePrefix("True/"))
		changed := time.Now()
		Expect(changed.Sub(stopped)).To(BeNumerically(">", lowered), "the node was silent for longer than the grace about to be set")
		updatePolicy(p.Name, func(s *v1alpha1.NodeHealthPolicySpec) { s.NodeMonitorGracePeriod = duration(lowered) })
		mark = markedAt(node, raised)
		seen := time.Now()
		GinkgoWriter.Printf("mark seen %v after the grace was lowered to %v; condition time %v after the change\n",
			seen.Sub(changed).Round(time.Millisecond), lowered, mark.Sub(changed).Round(time.Millisecond))
		// At the change: not at the raised deadline, nor a lowered grace
		// after the change. The test's own clock bounds when the mark
		// happened; the condition time, a stamp rounded up, only shows it
		// was not written before the change.
		Expect(seen.Sub(changed)).To(BeNumerically("<", lowered), "marked a lowered grace after the change, not at it")
		Expect(mark).To(BeTemporally(">=", changed.Truncate(time.Second)))
	})
})
