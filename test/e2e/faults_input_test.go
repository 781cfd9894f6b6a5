package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
)

// markSlack bounds how long after its deadline a node may be marked: the
// controller acts within a second of it, and the watch that shows the test
// a heartbeat or a mark takes a little more.
const markSlack = 2 * time.Second

// expectMarkedAfter checks that the node's Ready condition becomes want no
// earlier than grace after last, the moment the test's last heartbeat write
// returned, and within markSlack of that deadline.
func expectMarkedAfter(name string, last time.Time, grace time.Duration, want string) {
	GinkgoHelper()
	deadline := last.Add(grace)
	// The controller can see a write a little before the call returns.
	if early := time.Until(deadline) - 100*time.Millisecond; early > 0 {
		Consistently(readyStatus(name)).WithTimeout(early).ShouldNot(Equal(want), "marked before its deadline")
	}
	Eventually(readyStatus(name)).WithTimeout(time.Until(deadline.Add(markSlack))).Should(Equal(want),
		"not marked within %v of its deadline", markSlack)
}

// setConditions replaces the node's conditions, as a kubelet (or anything
// else with access to nodes/status) may.
func setConditions(name string, conds ...corev1.NodeCondition) {
	Eventually(func() error {
		node := getNode(name)
		node.Status.Conditions = conds
		return k8s.Status().Update(context.Background(), node)
	}).Should(Succeed())
}

// createLeaseWith creates a Lease with the given spec, deleted when the spec
// ends.
func createLeaseWith(namespace, name string, spec coordinationv1.LeaseSpec) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
	if err := k8s.Create(context.Background(), lease); err != nil {
		return err
	}
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), lease))).To(Succeed())
	})
	return nil
}

// changeNode applies change to the node and writes it, retrying on
// conflicts; it returns the write's error when the apiserver refuses it.
func changeNode(name string, change func(*corev1.Node)) error {
	var err error
	Eventually(func() bool {
		node := getNode(name)
		change(node)
		err = k8s.Update(context.Background(), node)
		return !apierrors.IsConflict(err)
	}).Should(BeTrue())
	return err
}

// controlNode is a node that, after a row has done its worst, must still be
// marked at its deadline and have its pod evicted: proof that both
// controllers are still at work.
type controlNode struct {
	name string
	stop func() time.Time
	pod  *corev1.Pod
}

// newControlNode starts a heartbeating node in a zone of its own, with a pod
// that goes as soon as the node is tainted NoExecute.
func newControlNode(id string) controlNode {
	name, stop := failingNode()
	inZone(name, "control-"+id)
	return controlNode{name: name, stop: stop, pod: createPod(name+"-p", name, tolerateUnreachable(ptr.To[int64](0)))}
}

// expectStillWorking stops the control node's heartbeats and checks that it
// is marked at its deadline and its pod evicted, and that no reconcile
// panicked since panicsBefore.
func (c controlNode) expectStillWorking(panicsBefore float64) {
	GinkgoHelper()
	before := markDelays()
	last := c.stop()
	expectMarkedAfter(c.name, last, grace, markedUnknown)
	Eventually(deleted(c.pod)).WithTimeout(5*time.Second).Should(BeTrue(), "the control node's pod is not evicted")
	Expect(maxDelayBoundSince(before, markDelays())).To(BeNumerically("<=", 1.0),
		"the controller measured a mark more than a second after its deadline")
	Expect(reconcilePanics()).To(Equal(panicsBefore), "a reconcile panicked; the log holds its stack")
}

// malformedRow is one row of the malformed input table: it applies the
// input and checks the outcome its entry states.
type malformedRow func(id string)

var _ = Describe("Malformed input", Label("faults"), func() {
	var (
		id           string
		control      controlNode
		panicsBefore float64
	)
	BeforeEach(func() {
		id = rand.String(5)
		// Several nodes of a row may fail together; that is no partition.
		startController(freezeOff)
		// Keeps the zone of unlabeled nodes from going fully down.
		liveNode()
		control = newControlNode(id)
		panicsBefore = reconcilePanics()
	})

	DescribeTable("leaves the controller up and each object judged as its entry says",
		func(apply malformedRow) {
			apply(id)
			By("the controller still marking a node at its deadline and evicting its pod")
			control.expectStillWorking(panicsBefore)
		},

		// Leases.
		Entry("a Lease without renewTime: its appearance is one heartbeat, and its node is marked at grace after it",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, corev1.ConditionTrue)
				Expect(createLeaseWith(corev1.NamespaceNodeLease, name, coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				})).To(Succeed())
				expectMarkedAfter(name, time.Now(), grace, markedUnknown)
			})),
		Entry("a Lease without holderIdentity: its renewals keep the node Ready, and it is marked at grace after the last",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, corev1.ConditionTrue)
				Expect(createLeaseWith(corev1.NamespaceNodeLease, name, coordinationv1.LeaseSpec{
					LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: time.Now()},
				})).To(Succeed())
				stop := leaseBeats(name)
				Consistently(readyStatus(name)).WithTimeout(2 * grace).Should(Equal(readyTrue))
				expectMarkedAfter(name, stop(), grace, markedUnknown)
			})),
		Entry("a Lease with the largest leaseDurationSeconds: the node is marked at the controller's grace, not the Lease's",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, corev1.ConditionTrue)
				Expect(createLeaseWith(corev1.NamespaceNodeLease, name, coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](math.MaxInt32),
					RenewTime: &metav1.MicroTime{Time: time.Now()},
				})).To(Succeed())
				stop := leaseBeats(name)
				Consistently(readyStatus(name)).WithTimeout(grace).Should(Equal(readyTrue))
				expectMarkedAfter(name, stop(), grace, markedUnknown)
			})),
		Entry("a Lease with leaseDurationSeconds 0: refused by the apiserver, never seen by the controller",
			malformedRow(func(string) {
				err := createLeaseWith(corev1.NamespaceNodeLease, newNodeName(), coordinationv1.LeaseSpec{
					LeaseDurationSeconds: ptr.To[int32](0),
				})
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			})),
		Entry("a Lease for a node that does not exist: ignored until the node registers, then its heartbeat",
			malformedRow(func(string) {
				name := newNodeName()
				Expect(createLeaseWith(corev1.NamespaceNodeLease, name, coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
					RenewTime: &metav1.MicroTime{Time: time.Now()},
				})).To(Succeed())
				stop := leaseBeats(name)
				Consistently(eventReasons(name)).WithTimeout(grace).Should(BeEmpty(), "the controller acted on a node that does not exist")
				createNode(name, corev1.ConditionTrue)
				// Past the status heartbeat's grace: only the Lease keeps it Ready.
				Consistently(readyStatus(name)).WithTimeout(2 * grace).Should(Equal(readyTrue))
				expectMarkedAfter(name, stop(), grace, markedUnknown)
			})),
		Entry("a Lease named after a node in another namespace: ignored, so the node is marked at grace although it renews",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, corev1.ConditionTrue)
				written := time.Now()
				Expect(createLeaseWith(metav1.NamespaceDefault, name, coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
					RenewTime: &metav1.MicroTime{Time: time.Now()},
				})).To(Succeed())
				beat(func() {
					Eventually(func() error {
						lease := &coordinationv1.Lease{}
						key := client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}
						if err := k8s.Get(context.Background(), key, lease); err != nil {
							return err
						}
						lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
						return k8s.Update(context.Background(), lease)
					}).Should(Succeed())
				})
				expectMarkedAfter(name, written, grace, markedUnknown)
			})),

		// Nodes.
		Entry("a Node with no conditions: the startup grace, then marked NodeStatusNeverUpdated",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, "")
				expectMarkedAfter(name, time.Now(), startupGrace, markedNeverSeen)
				Eventually(noScheduleTaints(name)).Should(ConsistOf(unreachableTaint))
			})),
		Entry("a Ready condition with a zero lastHeartbeatTime: kept Ready by its Lease, marked at grace after the Lease stops",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, "")
				setConditions(name, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletTrue"})
				createLease(name)
				stop := leaseBeats(name)
				Consistently(readyStatus(name)).WithTimeout(2 * grace).Should(Equal(readyTrue))
				expectMarkedAfter(name, stop(), grace, markedUnknown)
			})),
		Entry("two Ready conditions, True then False: the first counts, so no mark and no NoExecute taint while the Lease renews",
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, "")
				now := metav1.Now()
				setConditions(name,
					corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletTrue", LastHeartbeatTime: now},
					corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletFalse", LastHeartbeatTime: now})
				createLease(name)
				stop := leaseBeats(name)
				Consistently(func(g Gomega) {
					g.Expect(readyStatus(name)(g)).To(Equal(readyTrue))
					g.Expect(hasNoExecuteTaint(name)).To(BeFalse())
				}).WithTimeout(2 * grace).Should(Succeed())
				expectMarkedAfter(name, stop(), grace, markedUnknown)
			})),
		Entry(`Ready status "Maybe": not Ready, so tainted unreachable NoSchedule, but neither marked nor tainted NoExecute while it heartbeats`,
			malformedRow(func(string) {
				name := newNodeName()
				createNode(name, "Maybe")
				createLease(name)
				stop := leaseBeats(name)
				Eventually(noScheduleTaints(name)).Should(ConsistOf(unreachableTaint))
				Consistently(func(g Gomega) {
					g.Expect(readyStatus(name)(g)).To(Equal("Maybe/KubeletMaybe"))
					g.Expect(hasNoExecuteTaint(name)).To(BeFalse())
				}).WithTimeout(2 * grace).Should(Succeed())
				expectMarkedAfter(name, stop(), grace, markedUnknown)
			})),
		Entry("60-character region and zone values: judged, marked and tainted NoExecute like any node",
			labeledNode(func(id string) map[string]string {
				return map[string]string{
					corev1.LabelTopologyRegion: strings.Repeat("r", 54) + "-" + id,
					corev1.LabelTopologyZone:   strings.Repeat("z", 54) + "-" + id,
				}
			})),
		Entry("an empty zone label beside a region: judged, marked and tainted NoExecute like any node",
			labeledNode(func(id string) map[string]string {
				return map[string]string{corev1.LabelTopologyRegion: "r-" + id, corev1.LabelTopologyZone: ""}
			})),
		Entry("2,000 labels: judged, marked and tainted NoExecute like any node",
			labeledNode(func(id string) map[string]string {
				labels := map[string]string{corev1.LabelTopologyZone: "many-" + id}
				for i := range 2000 {
					labels[fmt.Sprintf("example.com/label-%d", i)] = strings.Repeat("v", 60)
				}
				return labels
			})),

		// Taints.
		Entry("an unreachable NoExecute taint without timeAdded on a Ready node: removed, and its pods stay",
			malformedRow(func(string) {
				name, _ := failingNode()
				pod := createPod(name+"-p", name, tolerateUnreachable(ptr.To[int64](0)))
				Eventually(eventReasons(name)).Should(ContainElement(nodehealth.ReasonRegisteredNode))
				Expect(changeNode(name, func(n *corev1.Node) {
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: unreachableTaint, Effect: corev1.TaintEffectNoExecute})
				})).To(Succeed())
				Eventually(func() bool { return hasNoExecuteTaint(name) }).Should(BeFalse())
				Consistently(func(g Gomega) {
					g.Expect(deleted(pod)(g)).To(BeFalse())
					g.Expect(podReadyStatus(pod)(g)).To(Equal(corev1.ConditionTrue))
				}).WithTimeout(grace).Should(Succeed())
			})),
		Entry("an unreachable NoExecute taint without timeAdded on an unreachable node: kept, and its pods evicted from when the controller first saw it",
			malformedRow(func(string) {
				name := newNodeName()
				written := time.Now()
				node := &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.NodeSpec{Taints: []corev1.Taint{
						{Key: unreachableTaint, Effect: corev1.TaintEffectNoExecute},
					}},
					// As a controller that marked it, then crashed, left it.
					Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
						Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
						LastHeartbeatTime: metav1.NewTime(written.Add(-time.Hour)),
					}}},
				}
				Expect(k8s.Create(context.Background(), node)).To(Succeed())
				DeferCleanup(deleteNode, name)
				short := createPod(name+"-short", name, tolerateUnreachable(ptr.To[int64](1)))
				plain := createPod(name+"-plain", name)
				// The controller counts an untimed taint from when it first saw
				// it, no earlier than the node's creation, which is stored in
				// whole seconds: the earliest deadline is a timeout after the
				// second the node was written in. Allow it a few seconds past
				// each deadline. Only a read answered before the earliest
				// deadline that finds the pod gone proves it evicted early: a
				// read sent before it may be answered after the eviction, when
				// the apiserver is busy. An eviction with no regard for the
				// taint's age would come the whole timeout early.
				earliest := written.Truncate(time.Second).Add(evictTimeout)
				Eventually(deleted(short)).WithTimeout(time.Until(written.Add(4 * time.Second))).Should(BeTrue())
				Consistently(func(g Gomega) bool {
					return deleted(plain)(g) && time.Now().Before(earliest)
				}).WithTimeout(time.Until(earliest)).Should(BeFalse(), "pod %s evicted before its deadline", plain.Name)
				Eventually(deleted(plain)).WithTimeout(time.Until(written.Add(evictTimeout + 3*time.Second))).Should(BeTrue())
				Expect(hasNoExecuteTaint(name)).To(BeTrue())
			})),
		Entry("a duplicate taint (same key and effect): refused by the apiserver; the same key with another effect is left alone",
			malformedRow(func(string) {
				name, _ := failingNode()
				// Admission's not-ready taint goes once the controller sees the node Ready.
				Eventually(func() []corev1.Taint { return getNode(name).Spec.Taints }).Should(BeEmpty())
				dup := corev1.Taint{Key: "example.com/dup", Effect: corev1.TaintEffectNoExecute}
				err := changeNode(name, func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, dup, dup) })
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
				Expect(changeNode(name, func(n *corev1.Node) {
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: unreachableTaint, Effect: corev1.TaintEffectPreferNoSchedule})
				})).To(Succeed())
				Consistently(func(g Gomega) {
					g.Expect(getNode(name).Spec.Taints).To(ConsistOf(
						corev1.Taint{Key: unreachableTaint, Effect: corev1.TaintEffectPreferNoSchedule}))
					g.Expect(readyStatus(name)(g)).To(Equal(readyTrue))
				}).WithTimeout(grace).Should(Succeed())
			})),

		// Pods.
		Entry("a pod tolerating the unreachable taint for math.MaxInt64 seconds: kept past the eviction timeout",
			podOnFailedNode(false, tolerateUnreachable(ptr.To[int64](math.MaxInt64)))),
		Entry("a pod tolerating it for -5 seconds: evicted as soon as the node is tainted",
			podOnFailedNode(true, tolerateUnreachable(ptr.To[int64](-5)))),
		Entry("a pod tolerating it for math.MinInt64 seconds: evicted as soon as the node is tainted",
			podOnFailedNode(true, tolerateUnreachable(ptr.To[int64](math.MinInt64)))),
		Entry("a pod tolerating it for 0 seconds: evicted as soon as the node is tainted",
			podOnFailedNode(true, tolerateUnreachable(ptr.To[int64](0)))),
		Entry("a pod with an Exists toleration without key: tolerates every taint forever, kept past the eviction timeout",
			podOnFailedNode(false, corev1.Toleration{Operator: corev1.TolerationOpExists})),
		Entry("a pod bound to a node that does not exist: left alone, Ready and not deleted",
			malformedRow(func(string) {
				pod := createPod(newNodeName()+"-p", newNodeName())
				Consistently(func(g Gomega) {
					g.Expect(deleted(pod)(g)).To(BeFalse())
					g.Expect(podReadyStatus(pod)(g)).To(Equal(corev1.ConditionTrue))
				}).WithTimeout(grace).Should(Succeed())
			})),
	)
})

// labeledNode is a row for a node with odd labels: it renews its Lease, then
// stops, and must be marked at its deadline and tainted NoExecute.
func labeledNode(labels func(id string) map[string]string) malformedRow {
	return func(id string) {
		name, stop := failingNode()
		Expect(changeNode(name, func(n *corev1.Node) {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			for k, v := range labels(id) {
				n.Labels[k] = v
			}
		})).To(Succeed())
		Consistently(readyStatus(name)).WithTimeout(grace).Should(Equal(readyTrue))
		expectMarkedAfter(name, stop(), grace, markedUnknown)
		Eventually(func() bool { return hasNoExecuteTaint(name) }).Should(BeTrue())
	}
}

// podOnFailedNode is a row for a pod with an odd toleration on a node that
// fails: evicted says whether it must go at once when the node is tainted
// NoExecute or stay past the pod eviction timeout.
func podOnFailedNode(evicted bool, toleration corev1.Toleration) malformedRow {
	return func(string) {
		name, stop := failingNode()
		pod := createPod(name+"-p", name, toleration)
		stop()
		added := unreachableAdded(name)
		if evicted {
			Eventually(deleted(pod)).WithTimeout(time.Until(added.Add(2 * time.Second))).Should(BeTrue())
			return
		}
		Consistently(deleted(pod)).WithTimeout(time.Until(added.Add(evictTimeout + time.Second))).Should(BeFalse())
	}
}
