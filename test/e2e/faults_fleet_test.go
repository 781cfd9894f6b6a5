package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// faultsLabel groups a spec's hand-made nodes, so that a watch can follow
// them.
const faultsLabel = "e2e.nodelifecycle.io/faults"

// fleetRenewal is how long before a fleet node is stopped it may have
// renewed its Lease last: one renewal interval (a quarter of the 2s Lease)
// and its jitter.
const fleetRenewal = 600 * time.Millisecond

// fleetPods lists the fleet's pods.
func fleetPods(f *fleet.Fleet) func(g Gomega) []corev1.Pod {
	return func(g Gomega) []corev1.Pod {
		list := &corev1.PodList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault),
			client.MatchingLabelsSelector{Selector: fleetPodSelector(f)})).To(Succeed())
		return list.Items
	}
}

// podsIntact checks that pods are neither deleted nor marked NotReady.
func podsIntact(g Gomega, pods []corev1.Pod) {
	for i := range pods {
		p := &pods[i]
		g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s was deleted", p.Name)
		ready := corev1.ConditionStatus("")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status
			}
		}
		g.Expect(ready).To(Equal(corev1.ConditionTrue), "pod %s was marked NotReady", p.Name)
	}
}

// podsStayIntact checks, for d, that the fleet's want pods are all still
// there, neither deleted nor marked NotReady.
func podsStayIntact(f *fleet.Fleet, want int, d time.Duration) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		pods := fleetPods(f)(g)
		g.Expect(pods).To(HaveLen(want))
		podsIntact(g, pods)
	}).WithTimeout(d).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// partitionEachZone cuts the first n nodes of every zone of the fleet off
// at once and returns them.
func partitionEachZone(f *fleet.Fleet, n int) []string {
	var silent []string
	for _, z := range f.Zones() {
		silent = append(silent, f.InZone(z)[:n]...)
	}
	f.Partition(silent...)
	return silent
}

// freezeEventsSince lists the reasons of the partition freeze events the
// controller emitted after since; earlier specs' events are still there.
// Core/v1 events keep whole seconds, so since is too.
func freezeEventsSince(since time.Time) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Namespace" && e.Regarding.Name == corev1.NamespaceNodeLease && !eventLastAt(e).Before(since.Truncate(time.Second)) {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// firstUnknown returns when the watch first showed the node's Ready
// condition Unknown.
func firstUnknown(h *nodeHistory, name string) time.Time {
	GinkgoHelper()
	for _, v := range h.of(name) {
		if c := condition(v.node, corev1.NodeReady); c != nil && c.Status == corev1.ConditionUnknown {
			return v.at
		}
	}
	Fail("node " + name + " was never marked Unknown")
	return time.Time{}
}

// expectMarkWithin checks that a mark the watch saw fell in [from, to].
func expectMarkWithin(name string, mark, from, to time.Time) {
	GinkgoHelper()
	Expect(mark).To(BeTemporally(">=", from), "%s marked %v before its earliest deadline", name, from.Sub(mark))
	Expect(mark).To(BeTemporally("<=", to), "%s marked %v after its latest deadline", name, mark.Sub(to))
}

// postReadyAt posts Ready=True with the heartbeat time a node's own clock
// gives.
func postReadyAt(name string, at time.Time) {
	Eventually(func() error {
		node := getNode(name)
		cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletTrue",
			LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}
		if c := condition(node, corev1.NodeReady); c != nil {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			*c = cond
		} else {
			node.Status.Conditions = append(node.Status.Conditions, cond)
		}
		return k8s.Status().Update(context.Background(), node)
	}).Should(Succeed())
}

// skewedStatusBeats posts Ready=True every heartbeat interval with the time
// nodeClock gives. The apiserver keeps heartbeat times in whole seconds, so
// a beat within the second of the one before changes nothing and is not
// written; the returned stop reports when the last write that changed the
// heartbeat returned.
func skewedStatusBeats(name string, nodeClock func() time.Time) (stop func() time.Time) {
	var prev, changed time.Time
	stopBeats := beat(func() {
		at := nodeClock().Truncate(time.Second)
		if at.Equal(prev) {
			return
		}
		postReadyAt(name, at)
		prev, changed = at, time.Now()
	})
	return func() time.Time {
		stopBeats()
		return changed
	}
}

// jumpingBack returns a node clock that starts an hour ahead and goes back
// ten minutes at every reading.
func jumpingBack() func() time.Time {
	at := time.Now().Add(time.Hour)
	return func() time.Time {
		at = at.Add(-10 * time.Minute)
		return at
	}
}

var _ = Describe("Clock skew", Label("faults"), func() {
	It("keeps nodes an hour ahead, an hour behind or jumping back Ready while they heartbeat, and marks each at grace after its last heartbeat on the controller's clock", func() {
		startController(freezeOff)
		liveNode()
		id := rand.String(5)

		type skewed struct {
			name string
			stop func() time.Time
		}
		var nodes []skewed
		add := func(lease bool, nodeClock func() time.Time) {
			name := newNodeName()
			createNode(name, corev1.ConditionTrue)
			Expect(changeNode(name, func(n *corev1.Node) { n.Labels = map[string]string{faultsLabel: id} })).To(Succeed())
			if lease {
				createLease(name)
				nodes = append(nodes, skewed{name, beat(func() { renewLease(name, nodeClock()) })})
				return
			}
			nodes = append(nodes, skewed{name, skewedStatusBeats(name, nodeClock)})
		}
		ahead := func() time.Time { return time.Now().Add(time.Hour) }
		behind := func() time.Time { return time.Now().Add(-time.Hour) }
		for _, lease := range []bool{true, false} {
			add(lease, ahead)
			add(lease, behind)
			add(lease, jumpingBack())
		}
		h := recordNodes(faultsLabel + "=" + id)

		By("every node staying Ready and untainted on its skewed heartbeats")
		clean := func(g Gomega) {
			for _, n := range nodes {
				g.Expect(readyStatus(n.name)(g)).To(Equal(readyTrue), "node %s", n.name)
				g.Expect(getNode(n.name).Spec.Taints).To(BeEmpty(), "node %s", n.name)
			}
		}
		Eventually(clean).Should(Succeed())
		Consistently(clean).WithTimeout(2 * grace).Should(Succeed())

		By("every node marked at grace after its own last heartbeat")
		before := markDelays()
		last := map[string]time.Time{}
		for _, n := range nodes {
			last[n.name] = n.stop()
		}
		for _, n := range nodes {
			Eventually(readyStatus(n.name)).WithTimeout(grace+2*markSlack).Should(Equal(markedUnknown), "node %s", n.name)
		}
		for _, n := range nodes {
			mark := firstUnknown(h, n.name)
			GinkgoWriter.Printf("%s marked %v after its last heartbeat\n", n.name, mark.Sub(last[n.name]).Round(time.Millisecond))
			// The controller may see a write shortly before the call returns.
			expectMarkWithin(n.name, mark, last[n.name].Add(grace-100*time.Millisecond), last[n.name].Add(grace+markSlack))
		}
		Expect(maxDelayBoundSince(before, markDelays())).To(BeNumerically("<=", 1.0),
			"the controller measured a mark more than a second after its deadline")
	})
})

var _ = Describe("Fleet partition", Label("faults"), func() {
	It("freezes while 80% of a fleet is silent past grace and eviction timeout: no NoExecute taint, no pod deleted or marked NotReady, and every node Ready with every pod when it comes back", func() {
		const zones, perZone, silentPerZone = 3, 10, 8
		// Zones count as partially disrupted only when wholly down, so that
		// without the freeze the silent nodes would be tainted at the
		// normal rate: the freeze alone must hold them.
		startController(func(o *options.Options) { o.UnhealthyZoneThreshold = 1 })
		id := rand.String(5)
		region := "p-" + id
		// Without tolerations, the pods go at --pod-eviction-timeout.
		f := startFleet(zones*perZone, zones, func(o *fleet.Options) { o.Region, o.PodsPerNode = region, 2 })
		allReady(f)
		Expect(fleetPods(f)(Default)).To(HaveLen(2 * zones * perZone))
		h := recordNodes(corev1.LabelTopologyRegion + "=" + region)

		By("80% of every zone losing its heartbeats at once")
		partitioned := time.Now()
		silent := partitionEachZone(f, silentPerZone)
		podsStayIntact(f, 2*zones*perZone, time.Until(partitioned.Add(grace+evictTimeout+2*time.Second)))
		// The event is written by the recorder's own goroutine, behind the
		// freeze itself.
		Eventually(freezeEventsSince(partitioned)).Should(ContainElement(nodehealth.ReasonPartitionFreeze))
		Expect(freezeGauge()).To(Equal(1.0))

		By("the silent nodes judged Unknown, the others never, and no node ever tainted NoExecute")
		for _, n := range f.Nodes() {
			versions := h.of(n)
			for _, v := range versions {
				Expect(lifecycleNoExecute(v.node)).To(BeEmpty(), "node %s tainted NoExecute at %v", n, v.at)
			}
			ready := condition(versions[len(versions)-1].node, corev1.NodeReady).Status
			if f.Stopped(n) {
				Expect(ready).To(Equal(corev1.ConditionUnknown), "silent node %s", n)
			} else {
				Expect(ready).To(Equal(corev1.ConditionTrue), "live node %s", n)
			}
		}

		By("the nodes coming back: every node Ready and untainted, every pod there, and the freeze ending")
		f.Resume(silent...)
		allReady(f)
		Eventually(freezeEventsSince(partitioned)).WithTimeout(grace + 5*time.Second).
			Should(ContainElement(nodehealth.ReasonPartitionFreezeEnded))
		Expect(freezeGauge()).To(Equal(0.0))
		// Nothing held during the freeze may go once it has ended.
		podsStayIntact(f, 2*zones*perZone, grace)
	})
})

var _ = Describe("Policy churn", Label("faults"), func() {
	It("marks silent nodes at the deadline of the policy in force when it comes, never marks live ones, evicts each dead node's pod once and settles the policies' status", func() {
		const (
			graceFirst, graceRaised, graceLowered = 3 * time.Second, 10 * time.Second, 7 * time.Second
			graceYounger                          = 2 * time.Second
			timeoutOlder, timeoutYounger          = 11 * time.Second, 4 * time.Second
		)
		startController(freezeOff)
		id := rand.String(5)
		pool := "c-" + id
		deletionsBefore := podDeletions()
		evictErrorsBefore := evictionErrors()
		spec := func(grace, timeout time.Duration) v1alpha1.NodeHealthPolicySpec {
			return v1alpha1.NodeHealthPolicySpec{
				NodeSelector:           selecting(pool),
				NodeMonitorGracePeriod: duration(grace),
				NodeStartupGracePeriod: duration(30 * time.Second),
				PodEvictionTimeout:     duration(timeout),
				// Half the pool fails on purpose: neither the breaker nor
				// the zone's partial disruption may hold its evictions.
				MaxUnhealthy:           ptr.To(intstr.FromString("100%")),
				UnhealthyZoneThreshold: ptr.To(1.0),
			}
		}

		f := startFleet(6, 1, func(o *fleet.Options) { o.Region = pool })
		nodes := f.Nodes()
		s1, s2, s3, live := nodes[0], nodes[1], nodes[2], nodes[3:]
		older := createPolicy("older-"+id, spec(graceFirst, timeoutOlder))
		labelPool(pool, nodes...)
		Eventually(policyCounts(older.Name)).Should(Equal([]int32{6, 6, 0}))
		allReady(f)
		h := recordNodes(poolLabel + "=" + pool)

		By("a node going silent, its policy's grace raised at once, an overlapping younger policy created, a second node going silent")
		t1 := time.Now()
		f.Stop(s1)
		updatePolicy(older.Name, func(s *v1alpha1.NodeHealthPolicySpec) { s.NodeMonitorGracePeriod = duration(graceRaised) })
		Expect(time.Since(t1)).To(BeNumerically("<", graceFirst-fleetRenewal-time.Second), "the grace was raised well before the first deadline")
		// Creation times are stored in whole seconds.
		Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).
			Should(BeTemporally(">", older.CreationTimestamp.Time))
		younger := createPolicy("younger-"+id, spec(graceYounger, timeoutYounger))
		t2 := time.Now()
		f.Stop(s2)
		Eventually(policyCondition(younger.Name, v1alpha1.ConditionConflict)).Should(Equal("True/" + v1alpha1.ReasonOverlap))
		Expect(policyCounts(younger.Name)(Default)).To(Equal([]int32{0, 0, 0}))

		By("neither the first grace nor the younger policy's marking them")
		Consistently(func(g Gomega) {
			g.Expect(readyStatus(s1)(g)).To(HavePrefix("True/"))
			g.Expect(readyStatus(s2)(g)).To(HavePrefix("True/"))
		}).WithTimeout(time.Until(t1.Add(graceFirst + 1500*time.Millisecond))).Should(Succeed())

		By("lowering the grace below the raised one: both marked at the lowered deadline")
		updatePolicy(older.Name, func(s *v1alpha1.NodeHealthPolicySpec) { s.NodeMonitorGracePeriod = duration(graceLowered) })
		Expect(time.Since(t1)).To(BeNumerically("<", graceLowered-fleetRenewal-500*time.Millisecond), "the grace was lowered before the new deadline")
		Eventually(readyStatus(s1)).WithTimeout(time.Until(t1.Add(graceLowered + markSlack))).Should(Equal(markedUnknown))
		Eventually(readyStatus(s2)).WithTimeout(time.Until(t2.Add(graceLowered + markSlack))).Should(Equal(markedUnknown))
		expectMarkWithin(s1, firstUnknown(h, s1), t1.Add(graceLowered-fleetRenewal), t1.Add(graceLowered+markSlack))
		expectMarkWithin(s2, firstUnknown(h, s2), t2.Add(graceLowered-fleetRenewal), t2.Add(graceLowered+markSlack))
		Eventually(policyCounts(older.Name)).Should(Equal([]int32{6, 4, 2}))
		Expect(policyCondition(older.Name, nodehealthpolicy.ConditionAccepted)(Default)).To(Equal("True/" + nodehealthpolicy.ReasonInForce))
		Eventually(func(g Gomega) int64 { return getPolicy(older.Name)(g).Status.ObservedGeneration }).
			Should(Equal(getPolicy(older.Name)(Default).Generation))

		By("a third node going silent and the older policy deleted: it follows the younger policy")
		t3 := time.Now()
		f.Stop(s3)
		Expect(k8s.Delete(context.Background(), older)).To(Succeed())
		Expect(time.Since(t3)).To(BeNumerically("<", graceYounger-fleetRenewal), "the older policy was deleted before the younger's deadline")
		Eventually(readyStatus(s3)).WithTimeout(time.Until(t3.Add(graceYounger + markSlack))).Should(Equal(markedUnknown))
		expectMarkWithin(s3, firstUnknown(h, s3), t3.Add(graceYounger-fleetRenewal), t3.Add(graceYounger+markSlack))

		By("each dead node's pod evicted once, at its taint's time plus the younger policy's timeout")
		for _, n := range []string{s1, s2, s3} {
			added := unreachableAdded(n)
			pod := fleetPod(n)
			Eventually(deleted(pod)).WithTimeout(time.Until(added.Add(timeoutYounger+3*time.Second))).Should(BeTrue(), "pod of %s", n)
			var evicted []eventsv1.Event
			Eventually(func(g Gomega) {
				evicted = evictionEvents(pod.Name)(g)
				g.Expect(evicted).To(HaveLen(1))
			}).Should(Succeed())
			Expect(eventCount(evicted[0])).To(BeEquivalentTo(1), "pod of %s evicted more than once", n)
			at := eventAt(evicted[0])
			// Under the older policy it would be timeoutOlder.
			Expect(at).To(BeTemporally(">=", added.Add(timeoutYounger)), "pod of %s evicted before its deadline", n)
			Expect(at).To(BeTemporally("<=", added.Add(timeoutYounger+2*time.Second)), "pod of %s evicted late", n)
		}
		Consistently(func(g Gomega) {
			for _, n := range []string{s1, s2, s3} {
				g.Expect(evictionEvents(fleetPod(n).Name)(g)).To(HaveLen(1))
			}
		}).WithTimeout(time.Second).Should(Succeed())
		for _, n := range []string{s1, s2, s3} {
			taintedOnce(h, n)
		}
		Expect(podDeletions() - deletionsBefore).To(Equal(3.0))
		Expect(evictionErrors()).To(Equal(evictErrorsBefore), "an eviction reconcile failed")

		By("the live nodes never marked, never tainted, their pods kept")
		for _, n := range live {
			for _, v := range h.of(n) {
				Expect(condition(v.node, corev1.NodeReady).Status).To(Equal(corev1.ConditionTrue), "live node %s at %v", n, v.at)
				Expect(v.node.Spec.Taints).To(BeEmpty(), "live node %s at %v", n, v.at)
			}
			Expect(deleted(fleetPod(n))(Default)).To(BeFalse())
		}

		By("the younger policy's status settling: in force, no overlap left, its pool's counts")
		Eventually(func(g Gomega) {
			p := getPolicy(younger.Name)(g)
			g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
			g.Expect([]int32{p.Status.Nodes, p.Status.HealthyNodes, p.Status.UnhealthyNodes}).To(Equal([]int32{6, 3, 3}))
			for typ, want := range map[string]string{
				nodehealthpolicy.ConditionAccepted: "True/" + nodehealthpolicy.ReasonInForce,
				v1alpha1.ConditionEvictionAllowed:  "True/" + v1alpha1.ReasonAllowed,
				v1alpha1.ConditionConflict:         "False/" + v1alpha1.ReasonNoConflict,
			} {
				g.Expect(policyCondition(younger.Name, typ)(g)).To(Equal(want), "condition %s", typ)
			}
		}).Should(Succeed())
	})
})
