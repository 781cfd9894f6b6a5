package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// nodeState is what the demo knows of one node at one instant.
type nodeState struct {
	Name string
	Zone string
	// ZoneKey is the zone as the controller names it: region/zone.
	ZoneKey string
	Ready   corev1.ConditionStatus
	Reason  string
	Taints  []corev1.Taint
	// RenewTime is the Lease's last renewal; zero without a Lease.
	RenewTime time.Time
	// PodsAlive counts the node's pods that are not being deleted.
	PodsAlive int
	// PodsDeleted counts the node's pods that are terminating or gone.
	PodsDeleted int
}

// noExecute returns the node's NoExecute taint, if it has one.
func (n *nodeState) noExecute() *corev1.Taint {
	for i := range n.Taints {
		if n.Taints[i].Effect == corev1.TaintEffectNoExecute {
			return &n.Taints[i]
		}
	}
	return nil
}

// snapshot is the state of the whole fleet as listed at one instant.
type snapshot struct {
	At    time.Time
	Nodes []nodeState // ordered by zone, then name
	// PodsAlive and PodsDeleted are the fleet's totals.
	PodsAlive, PodsDeleted int
	// PodsRunning counts the pods alive whose phase is Running, and
	// PodsTerminating those deleted that are still listed: with no kubelet
	// to finish them, as under a dead or frozen node, they stay so.
	PodsRunning, PodsTerminating int
	// Controller is what the controller's metrics said at the same time.
	Controller controllerView
}

// zoneStats counts a zone's nodes, with the state the controller gives it.
type zoneStats struct {
	Name            string
	Ready, NotReady int
	State           string
}

// zones returns the per-zone counts, in zone order.
func (s *snapshot) zones() []zoneStats {
	var out []zoneStats
	for _, n := range s.Nodes {
		if len(out) == 0 || out[len(out)-1].Name != n.Zone {
			out = append(out, zoneStats{Name: n.Zone, State: s.Controller.ZoneStates[n.ZoneKey]})
		}
		z := &out[len(out)-1]
		if n.Ready == corev1.ConditionTrue {
			z.Ready++
		} else {
			z.NotReady++
		}
	}
	return out
}

// held says why the controller holds destructive work, or "" when it does
// not: a partition freeze, or every zone fully disrupted.
func (s *snapshot) held() string {
	if s.Controller.Frozen {
		return "partition freeze"
	}
	zones := s.zones()
	for _, z := range zones {
		if z.State != "FullDisruption" {
			return ""
		}
	}
	if len(zones) == 0 {
		return ""
	}
	return "every zone is fully disrupted"
}

// count returns how many of the named nodes satisfy cond.
func (s *snapshot) count(names []string, cond func(*nodeState) bool) int {
	c := 0
	for i := range s.Nodes {
		if slices.Contains(names, s.Nodes[i].Name) && cond(&s.Nodes[i]) {
			c++
		}
	}
	return c
}

// all says whether every one of the named nodes is listed and satisfies cond.
func (s *snapshot) all(names []string, cond func(*nodeState) bool) bool {
	return len(names) > 0 && s.count(names, cond) == len(names)
}

// deletedOn sums the deleted pods of the named nodes.
func (s *snapshot) deletedOn(names []string) int {
	sum := 0
	for _, n := range s.Nodes {
		if slices.Contains(names, n.Name) {
			sum += n.PodsDeleted
		}
	}
	return sum
}

// observer lists the fleet's Nodes, Leases and pods, and reads the
// controller's metrics.
type observer struct {
	client      kubernetes.Interface
	controller  *controller
	podsPerNode int
	namespace   string
}

// observe takes a snapshot from the apiserver.
func (o *observer) observe(ctx context.Context) (*snapshot, error) {
	nodes, err := o.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	leases, err := o.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	pods, err := o.client.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: fleet.PodLabel})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	view, err := o.controller.scrape(ctx)
	if err != nil {
		return nil, err
	}
	s := &snapshot{At: time.Now(), Controller: view}
	renewed := make(map[string]time.Time, len(leases.Items))
	for _, l := range leases.Items {
		if l.Spec.RenewTime != nil {
			renewed[l.Name] = l.Spec.RenewTime.Time
		}
	}
	alive := make(map[string]int, len(nodes.Items))
	for _, p := range pods.Items {
		switch {
		case p.DeletionTimestamp != nil:
			s.PodsTerminating++
		case p.Status.Phase == corev1.PodRunning:
			s.PodsRunning++
			alive[p.Spec.NodeName]++
		default:
			alive[p.Spec.NodeName]++
		}
	}
	for _, n := range nodes.Items {
		ns := nodeState{
			Name:      n.Name,
			Zone:      n.Labels[corev1.LabelTopologyZone],
			ZoneKey:   disruption.ZoneKey(&n),
			Ready:     corev1.ConditionUnknown,
			Reason:    "NoStatus",
			Taints:    n.Spec.Taints,
			RenewTime: renewed[n.Name],
			PodsAlive: alive[n.Name],
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ns.Ready, ns.Reason = c.Status, c.Reason
			}
		}
		ns.PodsDeleted = max(0, o.podsPerNode-ns.PodsAlive)
		s.PodsAlive += ns.PodsAlive
		s.PodsDeleted += ns.PodsDeleted
		s.Nodes = append(s.Nodes, ns)
	}
	slices.SortFunc(s.Nodes, func(a, b nodeState) int {
		if c := strings.Compare(a.Zone, b.Zone); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return s, nil
}

// silentFor says how long before at the node's Lease was last renewed.
func (o *observer) silentFor(ctx context.Context, node string, at time.Time) (string, error) {
	s, err := o.observe(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range s.Nodes {
		if n.Name != node {
			continue
		}
		if n.RenewTime.IsZero() {
			return "no Lease", nil
		}
		return secs(at.Sub(n.RenewTime)), nil
	}
	return "", fmt.Errorf("node %s is not listed", node)
}

// partitionFreeze returns the message of the PartitionFreeze event the
// controller recorded since the given time, or "" if there is none. The
// controller writes core/v1 Events, as kube-controller-manager does: they
// carry first and last timestamps and no eventTime, and an event recorded
// again is counted on the first one, its last timestamp moved on. The event
// is about the kube-node-lease Namespace, a cluster-scoped object, so it
// lives in the default namespace.
func (o *observer) partitionFreeze(ctx context.Context, since time.Time) (string, error) {
	events, err := o.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list events: %w", err)
	}
	for _, e := range events.Items {
		if e.Reason == "PartitionFreeze" && e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == corev1.NamespaceNodeLease &&
			!e.LastTimestamp.Time.Before(since.Truncate(time.Second)) {
			return e.Message, nil
		}
	}
	return "", nil
}

// Conditions on one node, for the acts.

func isReady(n *nodeState) bool { return n.Ready == corev1.ConditionTrue }

func isUnknown(n *nodeState) bool { return n.Ready == corev1.ConditionUnknown }

func isHealthy(n *nodeState) bool { return isReady(n) && len(n.Taints) == 0 }

func hasLease(n *nodeState) bool { return !n.RenewTime.IsZero() }

func isRecovered(n *nodeState) bool { return isReady(n) && n.noExecute() == nil }

func isTainted(n *nodeState) bool {
	t := n.noExecute()
	return t != nil && t.Key == corev1.TaintNodeUnreachable
}

func podsGone(n *nodeState) bool { return n.PodsAlive == 0 }
