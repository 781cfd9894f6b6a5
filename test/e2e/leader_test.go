package e2e

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// Leader election timings short enough for a handover in seconds, and within
// client-go's rules: renew deadline below the lease duration, above 1.2
// retry periods.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// replica is one controller process of several that contend for a leader
// election Lease.
type replica struct {
	name string
	mgr  ctrl.Manager
	// kill cancels the replica's context and waits for its manager to
	// stop; the manager stops its controllers before its leader election,
	// so the replica writes nothing once kill returns. The Lease is not
	// released, as after a crash: the others must wait for it to expire.
	kill func()
}

// startReplica runs the controllers, with the suite's short timings as
// startController sets them, in a manager that acts only while it holds the
// named Lease in the default namespace.
func startReplica(name, leaseName string, tune ...func(*options.Options)) *replica {
	mgr, kill := runManager(func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = leaseName
		// Not kube-system: the suite's apiserver runs no controller that
		// would create it.
		o.LeaderElectionNamespace = metav1.NamespaceDefault
		o.LeaseDuration = ptr.To(leaseDuration)
		o.RenewDeadline = ptr.To(renewDeadline)
		o.RetryPeriod = ptr.To(retryPeriod)
		// A crash releases nothing.
		o.LeaderElectionReleaseOnCancel = false
	}, tune...)
	return &replica{name: name, mgr: mgr, kill: kill}
}

func elected(r *replica) bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// leaderLease reads the leader election Lease.
func leaderLease(name string) func(g Gomega) coordinationv1.LeaseSpec {
	return func(g Gomega) coordinationv1.LeaseSpec {
		lease := &coordinationv1.Lease{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}, lease)).To(Succeed())
		return lease.Spec
	}
}

// nodeVersion is a version of a Node as a watch delivered it, and when.
type nodeVersion struct {
	at   time.Time
	node *corev1.Node
}

// nodeHistory records every version of some nodes from a watch, so that a
// taint that came and went between two polls is seen all the same.
type nodeHistory struct {
	selector labels.Selector

	mu       sync.Mutex
	versions map[string][]nodeVersion
	// ended and err tell that the watch stopped before the spec did, and
	// why: versions may be missing.
	ended bool
	err   error
}

// recordNodes records the nodes that match the label selector, from now until
// the spec ends.
func recordNodes(selector string) *nodeHistory {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	sel, err := labels.Parse(selector)
	Expect(err).NotTo(HaveOccurred())
	h := &nodeHistory{selector: sel, versions: map[string][]nodeVersion{}}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	Expect(err).NotTo(HaveOccurred())
	for i := range list.Items {
		h.add(&list.Items[i])
	}
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				h.add(ev.Object.(*corev1.Node))
			case watch.Error:
				h.mu.Lock()
				h.err = apierrors.FromObject(ev.Object)
				h.mu.Unlock()
			}
		}
		h.mu.Lock()
		h.ended = true
		h.mu.Unlock()
	}()
	DeferCleanup(func() {
		w.Stop()
		<-done
	})
	return h
}

func (h *nodeHistory) add(node *corev1.Node) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.versions[node.Name] = append(h.versions[node.Name], nodeVersion{at: time.Now(), node: node})
}

// of returns the versions of a node seen so far, up to at least the one the
// apiserver holds when it is called: a spec that has just read a change
// from the apiserver finds it here too, although the watch delivers it a
// moment later. It fails if the watch has ended: versions may be missing.
func (h *nodeHistory) of(name string) []nodeVersion {
	GinkgoHelper()
	live := &corev1.Node{}
	err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, live)
	if err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "read node %s: %v", name, err)
	}
	caughtUp := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		Expect(h.err).NotTo(HaveOccurred(), "the node watch failed")
		Expect(h.ended).To(BeFalse(), "the node watch ended early")
		return slices.ContainsFunc(h.versions[name], func(v nodeVersion) bool {
			return v.node.ResourceVersion == live.ResourceVersion
		})
	}
	if err == nil && h.selector.Matches(labels.Set(live.Labels)) {
		Eventually(caughtUp).Should(BeTrue(), "the node watch never delivered %s at resourceVersion %s", name, live.ResourceVersion)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]nodeVersion(nil), h.versions[name]...)
}

// lifecycleNoExecute returns the node's unreachable and not-ready NoExecute
// taints.
func lifecycleNoExecute(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady) {
			out = append(out, t)
		}
	}
	return out
}

// taintedOnce checks that the node got the unreachable NoExecute taint
// exactly once and kept it, with one timeAdded, and returns when the watch
// first showed it and its timeAdded.
func taintedOnce(h *nodeHistory, name string) (seen, added time.Time) {
	present := false
	for _, v := range h.of(name) {
		lifecycle := lifecycleNoExecute(v.node)
		Expect(len(lifecycle)).To(BeNumerically("<=", 1), "node %s carries duplicate NoExecute taints: %v", name, lifecycle)
		switch {
		case len(lifecycle) == 1 && !present:
			Expect(lifecycle[0].Key).To(Equal(corev1.TaintNodeUnreachable))
			Expect(lifecycle[0].TimeAdded).NotTo(BeNil())
			present, seen, added = true, v.at, lifecycle[0].TimeAdded.Time
		case len(lifecycle) == 1:
			Expect(lifecycle[0].Key).To(Equal(corev1.TaintNodeUnreachable), "node %s", name)
			Expect(lifecycle[0].TimeAdded.Time).To(Equal(added), "node %s: the taint's timeAdded moved", name)
		case present:
			Fail("node " + name + " lost its NoExecute taint at " + v.at.String())
		}
	}
	Expect(present).To(BeTrue(), "node %s was never tainted NoExecute", name)
	return seen, added
}

// evictionEvents lists the TaintManagerEviction events regarding a pod.
func evictionEvents(pod string) func(g Gomega) []eventsv1.Event {
	return func(g Gomega) []eventsv1.Event {
		list := &eventsv1.EventList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod && e.Reason == podeviction.ReasonTaintManagerEviction {
				out = append(out, e)
			}
		}
		return out
	}
}

var _ = Describe("Leader election", Label("faults"), func() {
	It("hands over to the other replica when the leader dies, and resumes its queued taints and pending evictions once", func() {
		const (
			// One NoExecute taint every two seconds, so that a zone's
			// taints are still queued when the leader dies.
			rate = 0.5
			// The fleet's pods tolerate the unreachable taint this long:
			// their evictions fall due after the handover.
			toleration = 8
		)
		delaysBefore := evictionDelays()
		deletionsBefore := podDeletions()

		leaseName := "node-lifecycle-controller-" + rand.String(5)
		DeferCleanup(func() {
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: leaseName}}
			Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), lease))).To(Succeed())
		})
		tune := func(o *options.Options) {
			o.NodeEvictionRate = rate
			// Half the fleet going silent is not a partition here.
			o.PartitionFreezeThreshold = 0
		}
		replicas := []*replica{startReplica("a", leaseName, tune), startReplica("b", leaseName, tune)}

		By("one replica taking the Lease, the other standing by")
		var leader, standby *replica
		Eventually(func() int {
			n := 0
			for i, r := range replicas {
				if elected(r) {
					n++
					leader, standby = r, replicas[1-i]
				}
			}
			return n
		}).Should(Equal(1))
		holder := ptr.Deref(leaderLease(leaseName)(Default).HolderIdentity, "")
		Expect(holder).NotTo(BeEmpty())
		Consistently(func() bool { return elected(standby) }).WithTimeout(leaseDuration).Should(BeFalse())
		Expect(leaderLease(leaseName)(Default).HolderIdentity).To(HaveValue(Equal(holder)))
		GinkgoWriter.Printf("replica %s leads as %s\n", leader.name, holder)

		By("a fleet in two zones, ready and untainted under the leader")
		region := "leader-" + rand.String(4)
		f := startFleet(8, 2, func(o *fleet.Options) {
			o.Region, o.NamePrefix = region, region+"-"
			o.PodTolerations = []corev1.Toleration{tolerateUnreachable(ptr.To[int64](toleration))}
		})
		down, healthy := f.InZone(f.Zones()[0]), f.InZone(f.Zones()[1])
		Expect(down).To(HaveLen(4))
		Eventually(func(g Gomega) {
			for _, n := range f.Nodes() {
				g.Expect(readyStatus(n)(g)).To(HavePrefix("True/"))
				g.Expect(getNode(n).Spec.Taints).To(BeEmpty())
			}
		}).Should(Succeed())
		history := recordNodes(corev1.LabelTopologyRegion + "=" + region)

		By("a zone going silent, its first node tainted NoExecute and the others queued by the rate limit")
		f.Stop(down...)
		Eventually(func(g Gomega) {
			tainted := 0
			for _, n := range down {
				g.Expect(readyStatus(n)(g)).To(Equal(markedUnknown))
				if hasNoExecuteTaint(n) {
					tainted++
				}
			}
			g.Expect(tainted).To(BeNumerically(">=", 1))
		}).WithTimeout(grace + 5*time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())

		By("the leader dying without releasing the Lease")
		killedAt := time.Now()
		leader.kill()
		stoppedAt := time.Now()
		addedBefore := map[string]time.Time{}
		var queued []string
		for _, n := range down {
			if t := lifecycleNoExecute(getNode(n)); len(t) > 0 {
				addedBefore[n] = t[0].TimeAdded.Time
			} else {
				queued = append(queued, n)
			}
		}
		GinkgoWriter.Printf("leader stopped in %v; tainted before: %d, queued: %d\n",
			stoppedAt.Sub(killedAt).Round(time.Millisecond), len(addedBefore), len(queued))
		Expect(len(queued)).To(BeNumerically(">=", 2), "too few taints still queued at the kill to test their handover")

		held := leaderLease(leaseName)(Default)
		Expect(held.HolderIdentity).To(HaveValue(Equal(holder)), "the Lease must outlive the dead leader")
		Expect(held.RenewTime).NotTo(BeNil())
		// client-go compares Lease records at the second precision of
		// metav1.Time: the standby counts the lease duration from the first
		// renewal it saw in the second of the last one.
		expiry := held.RenewTime.Truncate(time.Second).Add(leaseDuration)
		Expect(time.Until(expiry)).To(BeNumerically(">", 0), "the leader took so long to stop that its Lease expired")
		// Nobody renews it and nobody takes it before it expires.
		Consistently(leaderLease(leaseName)).WithTimeout(time.Until(expiry) - 100*time.Millisecond).
			Should(And(HaveField("HolderIdentity", HaveValue(Equal(holder))), HaveField("RenewTime", Equal(held.RenewTime))))

		By("the standby taking over once the Lease expires")
		var taken coordinationv1.LeaseSpec
		Eventually(func(g Gomega) {
			taken = leaderLease(leaseName)(g)
			g.Expect(taken.HolderIdentity).NotTo(HaveValue(Equal(holder)))
		}).WithTimeout(leaseDuration + 5*time.Second).Should(Succeed())
		Eventually(standby.mgr.Elected()).Should(BeClosed())
		Expect(taken.HolderIdentity).To(HaveValue(Not(BeEmpty())))
		Expect(taken.AcquireTime).NotTo(BeNil())
		handover := taken.AcquireTime.Time
		GinkgoWriter.Printf("handover: replica %s holds the Lease %v after the kill (lease %v, retry %v)\n",
			standby.name, handover.Sub(killedAt).Round(time.Millisecond), leaseDuration, retryPeriod)
		Expect(handover).To(BeTemporally(">=", expiry), "the standby took a Lease that had not expired")
		// It tries every retry period, with up to 1.2 of jitter, and saw the
		// last renewal within one try; a second of slack for a slow machine.
		Expect(handover.Sub(killedAt)).To(BeNumerically("<=", leaseDuration+3*retryPeriod+time.Second))

		By("the queued taints added by the new leader, each node once, at the zone's rate")
		var taintedAt []time.Time
		Eventually(func() int {
			n := 0
			for _, node := range down {
				if hasNoExecuteTaint(node) {
					n++
				}
			}
			return n
		}).WithTimeout(time.Duration(float64(len(queued))/rate*float64(time.Second)) + 5*time.Second).Should(Equal(len(down)))
		added := map[string]time.Time{}
		for _, n := range down {
			seen, at := taintedOnce(history, n)
			added[n] = at
			taintedAt = append(taintedAt, seen)
			if before, ok := addedBefore[n]; ok {
				Expect(at).To(Equal(before), "node %s: the taint added before the kill was replaced", n)
			} else {
				Expect(seen).To(BeTemporally(">", handover), "node %s was tainted between the kill and the handover", n)
				// timeAdded has second precision.
				Expect(at).To(BeTemporally(">=", handover.Truncate(time.Second)), "node %s: taint stamped before the handover", n)
			}
		}
		sort.Slice(taintedAt, func(i, j int) bool { return taintedAt[i].Before(taintedAt[j]) })
		GinkgoWriter.Printf("NoExecute taint spacing across the handover at %v nodes/s: %v\n", rate, gaps(taintedAt))
		// The new leader's bucket starts full, but the handover alone takes
		// longer than one interval.
		for _, gap := range gaps(taintedAt) {
			Expect(gap).To(BeNumerically(">=", time.Duration(float64(time.Second)/rate)-200*time.Millisecond))
		}

		By("every pending eviction done once, by the new leader, not before its deadline")
		for _, n := range down {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: n + "-pod-0"}}
			deadline := added[n].Add(toleration * time.Second)
			Expect(deadline).To(BeTemporally(">", handover), "pod %s was not pending across the handover", pod.Name)
			Eventually(deleted(pod)).WithTimeout(time.Until(deadline) + 5*time.Second).Should(BeTrue())
			got := &corev1.Pod{}
			Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)).To(Succeed())
			// Deletion time, to the second: its deadline is whole seconds too.
			requested := got.DeletionTimestamp.Add(-time.Duration(ptr.Deref(got.DeletionGracePeriodSeconds, 0)) * time.Second)
			Expect(requested).To(BeTemporally(">=", deadline), "pod %s deleted before its deadline", pod.Name)
			Eventually(evictionEvents(pod.Name)).Should(HaveLen(1))
		}
		// A second eviction would be a second event or, from the same
		// recorder, a repeat folded into the first one.
		Consistently(func(g Gomega) {
			for _, n := range down {
				events := evictionEvents(n + "-pod-0")(g)
				g.Expect(events).To(HaveLen(1))
				g.Expect(eventCount(events[0])).To(BeEquivalentTo(1))
				g.Expect(eventAt(events[0])).To(BeTemporally(">=", added[n].Add(toleration*time.Second)))
			}
		}).WithTimeout(time.Second).Should(Succeed())
		Expect(podDeletions() - deletionsBefore).To(Equal(float64(len(down))))
		Expect(maxDelayBoundSince(delaysBefore, evictionDelays())).To(BeNumerically("<=", 1.0))

		By("the other zone left alone throughout, and each silent node marked once")
		for _, n := range healthy {
			versions := history.of(n)
			Expect(versions).NotTo(BeEmpty())
			for _, v := range versions {
				Expect(v.node.Spec.Taints).To(BeEmpty(), "healthy node %s tainted at %v", n, v.at)
				Expect(condition(v.node, corev1.NodeReady)).To(HaveField("Status", corev1.ConditionTrue), "healthy node %s marked at %v", n, v.at)
			}
			Expect(deleted(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: n + "-pod-0"}})(Default)).To(BeFalse())
			Expect(eventReasons(n)(Default)).NotTo(ContainElement(nodehealth.ReasonNodeNotReady))
		}
		for _, n := range down {
			// The new leader finds the node marked already: no second mark.
			reasons := eventReasons(n)(Default)
			notReady := 0
			for _, r := range reasons {
				if r == nodehealth.ReasonNodeNotReady {
					notReady++
				}
			}
			Expect(notReady).To(Equal(1), "node %s: events %v", n, reasons)
		}
	})
})
