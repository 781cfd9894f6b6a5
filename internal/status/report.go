package status

import (
	"cmp"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/maintenance"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// Input is what a report is built from.
type Input struct {
	Now    time.Time
	Nodes  []corev1.Node
	Leases []coordinationv1.Lease
	Pods   []corev1.Pod
	// Policies are the policies in force, resolved against the flags.
	Policies *policy.Set
	// PolicyObjects are the NodeHealthPolicies as stored, for their
	// EvictionAllowed conditions.
	PolicyObjects []v1alpha1.NodeHealthPolicy
	// FrozenSince is when the partition freeze in force began, zero when
	// none holds.
	FrozenSince time.Time
}

// Report is the answer.
type Report struct {
	GeneratedAt time.Time `json:"generatedAt"`
	// PartitionFreeze, when set, holds NoExecute tainting and eviction in
	// the whole cluster since that time.
	PartitionFreeze *time.Time `json:"partitionFreeze,omitempty"`
	// AllZonesDown is true when no zone has a ready node: nothing is
	// tainted NoExecute or evicted.
	AllZonesDown bool   `json:"allZonesDown,omitempty"`
	Zones        []Zone `json:"zones"`
	// Unhealthy lists the nodes that are not Ready or carry a node
	// lifecycle taint, by pool, zone and name.
	Unhealthy []Node `json:"unhealthyNodes"`
}

// Zone is a zone of a pool.
type Zone struct {
	Pool     string `json:"pool,omitempty"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Ready    int    `json:"ready"`
	NotReady int    `json:"notReady"`
}

// Node is an unhealthy node.
type Node struct {
	Name string `json:"name"`
	Pool string `json:"pool,omitempty"`
	Zone string `json:"zone"`
	// Verdict is Unreachable, NotReady or NeverReported.
	Verdict string `json:"verdict"`
	// Why is the Ready condition's reason and message.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Since is when the Ready condition last changed.
	Since *time.Time `json:"since,omitempty"`
	// LastHeartbeat is the later of the Lease's renewTime and the Ready
	// condition's lastHeartbeatTime, as the node's clock wrote them.
	LastHeartbeat *time.Time `json:"lastHeartbeat,omitempty"`
	// HeartbeatAge is the time since LastHeartbeat, on this machine's clock.
	HeartbeatAge *Duration `json:"heartbeatAge,omitempty"`
	Taints       []Taint   `json:"taints,omitempty"`
	// Held says why NoExecute tainting and eviction are held back for the
	// node, or is empty.
	Held string `json:"held,omitempty"`
	// Maintenance is set when the node has a maintenance condition, and
	// its pool a maintenance grace.
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	Pods        []Pod        `json:"pods,omitempty"`
}

// Maintenance is the maintenance a node is in.
type Maintenance struct {
	// Condition is the maintenance condition that is True.
	Condition string `json:"condition"`
	// Since is when Condition turned True, when that was written.
	Since *time.Time `json:"since,omitempty"`
	// HeldUntil is when the maintenance grace runs out, or ran out; unset
	// while the node is Ready or has never reported, when the grace has
	// not begun.
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
	// Held is true while the maintenance keeps the node out of its zone's
	// counts and holds its NoExecute taint and evictions.
	Held bool `json:"held"`
}

// Taint is a taint on a node.
type Taint struct {
	Key       string     `json:"key"`
	Effect    string     `json:"effect"`
	TimeAdded *time.Time `json:"timeAdded,omitempty"`
}

// Pod is a pod on an unhealthy node and its eviction deadline.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// EvictAt is the deadline, when the pod is to be evicted at all.
	EvictAt *time.Time `json:"evictAt,omitempty"`
	// TimeLeft is EvictAt minus now; negative once due.
	TimeLeft *Duration `json:"timeLeft,omitempty"`
	// DecidedBy is what set the deadline: TolerationSeconds,
	// PodEvictionTimeout, NotTolerated, ToleratedForever, or
	// NoNoExecuteTaint while the node is not (yet) tainted.
	DecidedBy string `json:"decidedBy"`
	// Taint is the taint whose deadline comes first.
	Taint string `json:"taint,omitempty"`
}

// Duration marshals as a Go duration string.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Why eviction is held back, as the report says it.
const (
	HeldFreeze   = "partition freeze"
	HeldAllDown  = "every zone is fully disrupted"
	HeldByPolicy = "policy: "
	// HeldMaintenance is followed by the maintenance condition and when
	// the hold ends; it is the controller's own word for the hold, so that
	// the report and the node's events read alike.
	HeldMaintenance = disruption.HeldMaintenance
)

// Build computes the report.
func Build(in Input) Report {
	r := Report{GeneratedAt: in.Now, Zones: []Zone{}, Unhealthy: []Node{}}
	if !in.FrozenSince.IsZero() {
		r.PartitionFreeze = ptrTo(in.FrozenSince)
	}
	settings := make(map[string]policy.Settings, len(in.Nodes))
	windows := make(map[string]maintenance.Window, len(in.Nodes))
	held := make(map[string]bool, len(in.Nodes))
	counted := make([]disruption.NodeStatus, 0, len(in.Nodes))
	for i := range in.Nodes {
		n := &in.Nodes[i]
		s := in.Policies.For(n.Labels)
		settings[n.Name] = s
		// The times are read as stored, with no skew: the report does not
		// measure how far this machine's clock runs from the apiserver's,
		// as the controller does.
		w, h := safety.MaintenanceOf(n, s, 0, in.Now)
		windows[n.Name], held[n.Name] = w, h
		counted = append(counted, safety.Counted(n, s.Pool, w, h))
	}
	zoneStates := disruption.ZoneStates(counted, func(pool string) float64 {
		for _, p := range in.Policies.Pools() {
			if p.Pool == pool {
				return p.Disruption.UnhealthyZoneThreshold
			}
		}
		return in.Policies.Defaults().Disruption.UnhealthyZoneThreshold
	})
	r.AllZonesDown = len(zoneStates) > 0
	for id, z := range zoneStates {
		r.Zones = append(r.Zones, Zone{Pool: id.Pool, Name: id.Zone, Ready: z.Ready, NotReady: z.NotReady, State: z.State.String()})
		r.AllZonesDown = r.AllZonesDown && z.State == disruption.ZoneFullDisruption
	}
	slices.SortFunc(r.Zones, func(a, b Zone) int { return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Name, b.Name)) })

	leases := make(map[string]*coordinationv1.Lease, len(in.Leases))
	for i := range in.Leases {
		leases[in.Leases[i].Name] = &in.Leases[i]
	}
	pods := map[string][]*corev1.Pod{}
	for i := range in.Pods {
		p := &in.Pods[i]
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			pods[p.Spec.NodeName] = append(pods[p.Spec.NodeName], p)
		}
	}
	blocked := policyBlocks(in.PolicyObjects)

	for i := range in.Nodes {
		n := &in.Nodes[i]
		ready := health.ReadyCondition(n)
		lifecycleTaint := hasLifecycleTaint(n)
		if ready != nil && ready.Status == corev1.ConditionTrue && !lifecycleTaint {
			continue
		}
		s := settings[n.Name]
		out := Node{Name: n.Name, Pool: s.Pool, Zone: disruption.ZoneKey(n), Verdict: verdict(ready)}
		if ready != nil {
			out.Reason, out.Message = ready.Reason, ready.Message
			if !ready.LastTransitionTime.IsZero() {
				out.Since = ptrTo(ready.LastTransitionTime.Time)
			}
		}
		if hb := lastHeartbeat(ready, leases[n.Name]); !hb.IsZero() {
			out.LastHeartbeat = ptrTo(hb)
			out.HeartbeatAge = ptrTo(Duration(in.Now.Sub(hb)))
		}
		for _, t := range n.Spec.Taints {
			tt := Taint{Key: t.Key, Effect: string(t.Effect)}
			if t.TimeAdded != nil {
				tt.TimeAdded = ptrTo(t.TimeAdded.Time)
			}
			out.Taints = append(out.Taints, tt)
		}
		w := windows[n.Name]
		if w.In() {
			out.Maintenance = maintenanceOf(w, held[n.Name])
		}
		out.Held = heldBy(r, s, zoneStates[disruption.ZoneID{Pool: s.Pool, Zone: out.Zone}].State, blocked, w, held[n.Name])
		for _, p := range pods[n.Name] {
			d := eviction.Deadline(p, n.Spec.Taints, s.PodEvictionTimeout, in.Now)
			pod := Pod{Namespace: p.Namespace, Name: p.Name, DecidedBy: d.Cause.String(), Taint: d.Taint}
			if d.Evict {
				pod.EvictAt = ptrTo(d.At)
				pod.TimeLeft = ptrTo(Duration(d.At.Sub(in.Now)))
			}
			out.Pods = append(out.Pods, pod)
		}
		slices.SortFunc(out.Pods, func(a, b Pod) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) })
		r.Unhealthy = append(r.Unhealthy, out)
	}
	slices.SortFunc(r.Unhealthy, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Name, b.Name))
	})
	return r
}

// heldBy says why the node's NoExecute tainting and eviction are held back:
// the cluster-wide holds, then its pool's and zone's, then its maintenance,
// in the order the controller tells them.
func heldBy(r Report, s policy.Settings, zone disruption.ZoneState, blocked map[string]string, w maintenance.Window, inMaintenance bool) string {
	switch {
	case r.PartitionFreeze != nil:
		return HeldFreeze
	case r.AllZonesDown:
		return HeldAllDown
	case blocked[s.Pool] != "":
		return HeldByPolicy + blocked[s.Pool]
	case s.Disruption.Invalid:
		return HeldByPolicy + "not in force (see its Accepted condition), and its nodes held until it is fixed or deleted"
	case s.Disruption.HaltFullZones && zone == disruption.ZoneFullDisruption:
		return HeldByPolicy + "zone fully disrupted, and fullDisruption is Halt"
	case inMaintenance:
		why := HeldMaintenance + " (" + string(w.Condition) + ")"
		if !w.Until.IsZero() {
			why += ", until " + clock(w.Until)
		}
		return why
	}
	return ""
}

// maintenanceOf reports a node's maintenance window, and whether it holds
// the node.
func maintenanceOf(w maintenance.Window, held bool) *Maintenance {
	m := &Maintenance{Condition: string(w.Condition), Held: held}
	if !w.Since.IsZero() {
		m.Since = ptrTo(w.Since)
	}
	if !w.Until.IsZero() {
		m.HeldUntil = ptrTo(w.Until)
	}
	return m
}

// policyBlocks maps each policy whose status says eviction is blocked to
// the reason and message it gives.
func policyBlocks(policies []v1alpha1.NodeHealthPolicy) map[string]string {
	out := map[string]string{}
	for i := range policies {
		p := &policies[i]
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionEvictionAllowed)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		// The cluster-wide holds are reported as such.
		if c.Reason == v1alpha1.ReasonPartitionFreeze {
			continue
		}
		out[p.Name] = c.Reason + " (" + c.Message + ")"
	}
	return out
}

func verdict(ready *corev1.NodeCondition) string {
	switch {
	case health.NeverReported(ready):
		return health.StateNeverReported.String()
	case ready.Status == corev1.ConditionFalse:
		return health.StateNotReady.String()
	case ready.Status == corev1.ConditionTrue:
		return health.StateHealthy.String()
	default:
		return health.StateUnreachable.String()
	}
}

func lastHeartbeat(ready *corev1.NodeCondition, lease *coordinationv1.Lease) time.Time {
	var t time.Time
	if ready != nil && !health.NeverReported(ready) {
		t = ready.LastHeartbeatTime.Time
	}
	if lease != nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(t) {
		t = lease.Spec.RenewTime.Time
	}
	return t
}

func hasLifecycleTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if eviction.IsLifecycleTaint(t.Key) {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
