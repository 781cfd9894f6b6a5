package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newNodeName returns a name no other spec uses.
func newNodeName() string { return "node-" + rand.String(6) }

// createNode creates a Node and, when ready is not empty, posts a Ready
// condition with that status, as a registering kubelet does.
func createNode(name string, ready corev1.ConditionStatus) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8s.Create(context.Background(), node)).To(Succeed())
	DeferCleanup(func() {
		err := k8s.Delete(context.Background(), node)
		Expect(client.IgnoreNotFound(err)).To(Succeed())
	})
	if ready != "" {
		postReady(name, ready)
	}
}

// postReady writes the Ready condition with a fresh heartbeat time, as the
// kubelet's status update does.
func postReady(name string, status corev1.ConditionStatus) {
	ctx := context.Background()
	Eventually(func() error {
		node := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		now := metav1.Now()
		cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: "Kubelet" + string(status),
			LastHeartbeatTime: now, LastTransitionTime: now}
		replaced := false
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				if node.Status.Conditions[i].Status == status {
					cond.LastTransitionTime = node.Status.Conditions[i].LastTransitionTime
				}
				node.Status.Conditions[i] = cond
				replaced = true
			}
		}
		if !replaced {
			node.Status.Conditions = append(node.Status.Conditions, cond)
		}
		return k8s.Status().Update(ctx, node)
	}).Should(Succeed())
}

// createLease creates the node's Lease in kube-node-lease.
func createLease(name string) {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	Expect(k8s.Create(context.Background(), lease)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), lease))).To(Succeed())
	})
}

// renewLease moves the Lease's renewTime by d from its current value; a
// negative d is a node clock jumping backwards.
func renewLease(name string, at time.Time) {
	ctx := context.Background()
	Eventually(func() error {
		lease := &coordinationv1.Lease{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: name}, lease); err != nil {
			return err
		}
		lease.Spec.RenewTime = &metav1.MicroTime{Time: at}
		return k8s.Update(ctx, lease)
	}).Should(Succeed())
}

// beat calls fn every heartbeat interval until the returned function is
// called, like a kubelet's renewal loop. The returned time is when the last
// beat was written.
func beat(fn func()) (stop func() time.Time) {
	done := make(chan struct{})
	last := make(chan time.Time, 1)
	go func() {
		defer GinkgoRecover()
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		lastAt := time.Now()
		for {
			select {
			case <-done:
				last <- lastAt
				return
			case <-t.C:
				fn()
				lastAt = time.Now()
			}
		}
	}()
	stopped := false
	var at time.Time
	stop = func() time.Time {
		if !stopped {
			stopped = true
			close(done)
			at = <-last
		}
		return at
	}
	DeferCleanup(func() { stop() })
	return stop
}

// leaseBeats renews the node's Lease with the real clock.
func leaseBeats(name string) func() time.Time {
	return beat(func() { renewLease(name, time.Now()) })
}

// statusBeats posts Ready=True with a fresh heartbeat.
func statusBeats(name string) func() time.Time {
	return beat(func() { postReady(name, corev1.ConditionTrue) })
}

func getNode(name string) *corev1.Node {
	node := &corev1.Node{}
	Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
	return node
}

func condition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// readyStatus reads the node's Ready status and reason from the apiserver.
func readyStatus(name string) func(g Gomega) string {
	return func(g Gomega) string {
		node := &corev1.Node{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
		c := condition(node, corev1.NodeReady)
		if c == nil {
			return "<none>"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// noScheduleTaints reads the keys of the node's NoSchedule taints.
func noScheduleTaints(name string) func(g Gomega) []string {
	return func(g Gomega) []string {
		node := &corev1.Node{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
		keys := []string{}
		for _, t := range node.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule {
				keys = append(keys, t.Key)
			}
		}
		return keys
	}
}

// eventReasons lists the reasons of the events regarding a node.
func eventReasons(name string) func(g Gomega) []string { return eventReasonsAbout("Node", name) }

// eventReasonsOn lists the reasons of the events regarding a namespace.
func eventReasonsOn(name string) func(g Gomega) []string { return eventReasonsAbout("Namespace", name) }

func eventReasonsAbout(kind, name string) func(g Gomega) []string {
	return eventReasonsMatching(client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": name})
}

// eventAt is when an event was first reported: an events.k8s.io event
// carries its eventTime, a core/v1 one, written as kube-controller-manager
// writes them, its first timestamp in whole seconds.
func eventAt(e eventsv1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.DeprecatedFirstTimestamp.Time
}

// eventLastAt is when an event was last reported, in whole seconds for a
// core/v1 event that the recorder folded repeats into.
func eventLastAt(e eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	default:
		return eventAt(e)
	}
}

// eventCount is how many times an event was reported: a series, or the
// count of a core/v1 event that the recorder folded repeats into.
func eventCount(e eventsv1.Event) int32 {
	switch {
	case e.Series != nil:
		return e.Series.Count
	case e.DeprecatedCount > 0:
		return e.DeprecatedCount
	default:
		return 1
	}
}

// reasonsFrom lists the reasons of the events a component reported about an
// object, found as `kubectl get events -A --field-selector source=...` finds
// them.
func reasonsFrom(source, kind, name string) func(g Gomega) []string {
	return eventReasonsMatching(client.MatchingFields{"source": source, "involvedObject.kind": kind, "involvedObject.name": name})
}

// eventReasonsMatching lists the reasons of the events that match the field
// selector, in every namespace.
func eventReasonsMatching(fields client.MatchingFields) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), list, fields)).To(Succeed())
		reasons := make([]string, 0, len(list.Items))
		for _, e := range list.Items {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}
}

func deleteNode(name string) {
	err := k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue())
}
