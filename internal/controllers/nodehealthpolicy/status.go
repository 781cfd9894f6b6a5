package nodehealthpolicy

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// ConditionAccepted is True when the policy is in force, False (reason
// Invalid) when it cannot be: its nodes then follow the flags' timing, and
// are held (no NoExecute taint, no eviction) until it is fixed or deleted.
const (
	ConditionAccepted = "Accepted"
	ReasonInvalid     = "Invalid"
	ReasonInForce     = "InForce"
)

// guardView is what the disruption guard says of a pool.
type guardView struct {
	frozen, halted bool
	// hold is the pool's own hold: disruption.HeldPaused, HeldBreaker or "".
	hold  string
	zones map[string]disruption.ZoneSnapshot
}

// computeStatus returns the status a policy should have: it follows from
// the policy, the set in force, the nodes and the guard, and nothing else.
// Conditions keep their transition times from the current status.
func computeStatus(p *v1alpha1.NodeHealthPolicy, set *policy.Set, nodes []corev1.Node, g guardView, now metav1.Time) v1alpha1.NodeHealthPolicyStatus {
	st := v1alpha1.NodeHealthPolicyStatus{
		ObservedGeneration: p.Generation,
		Conditions:         slices.Clone(p.Status.Conditions),
	}
	set1 := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
			Message: msg, ObservedGeneration: p.Generation, LastTransitionTime: now})
	}

	if err, invalid := set.Invalid[p.Name]; invalid {
		set1(ConditionAccepted, metav1.ConditionFalse, ReasonInvalid,
			fmt.Sprintf("Not in force: its nodes follow the controller's flags for timing, and get no NoExecute taint and no eviction until it is fixed or deleted: %v", err))
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionEvictionAllowed)
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionConflict)
		return st
	}
	set1(ConditionAccepted, metav1.ConditionTrue, ReasonInForce, "The policy is in force")

	owners := map[string]int{} // older policies that hold nodes this one selects
	for i := range nodes {
		n := &nodes[i]
		follows := set.For(n.Labels).Pool
		if follows != p.Name {
			if set.Selects(p.Name, n.Labels) {
				owners[follows]++
			}
			continue
		}
		st.Nodes++
		if ready := health.ReadyCondition(n); ready != nil && ready.Status == corev1.ConditionTrue {
			st.HealthyNodes++
		}
	}
	st.UnhealthyNodes = st.Nodes - st.HealthyNodes

	var full []string
	for name, z := range g.zones {
		st.Zones = append(st.Zones, v1alpha1.ZoneStatus{Name: name, State: z.State.String(),
			Nodes: int32(z.Size()), Unhealthy: int32(z.NotReady)})
		if z.State == disruption.ZoneFullDisruption {
			full = append(full, name)
		}
	}
	slices.SortFunc(st.Zones, func(a, b v1alpha1.ZoneStatus) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(full)

	status, reason, msg := evictionAllowed(p, st, g, full)
	set1(v1alpha1.ConditionEvictionAllowed, status, reason, msg)

	if len(owners) == 0 {
		set1(v1alpha1.ConditionConflict, metav1.ConditionFalse, v1alpha1.ReasonNoConflict,
			"Every node the policy selects follows it")
	} else {
		var parts []string
		for owner, n := range owners {
			name := "no policy"
			if owner != "" {
				name = "NodeHealthPolicy " + owner
			}
			parts = append(parts, fmt.Sprintf("%d follow %s", n, name))
		}
		slices.Sort(parts)
		set1(v1alpha1.ConditionConflict, metav1.ConditionTrue, v1alpha1.ReasonOverlap,
			"Nodes the policy selects follow an older policy: "+strings.Join(parts, ", "))
	}
	return st
}

// evictionAllowed says whether the pool's nodes may be tainted NoExecute and
// their pods evicted, and if not, why, in order of what an operator should
// look at first.
func evictionAllowed(p *v1alpha1.NodeHealthPolicy, st v1alpha1.NodeHealthPolicyStatus, g guardView, full []string) (metav1.ConditionStatus, string, string) {
	switch {
	case g.hold == disruption.HeldPaused:
		return metav1.ConditionFalse, v1alpha1.ReasonPaused,
			"Paused by pauseRequests: " + strings.Join(p.Spec.PauseRequests, ", ")
	case g.frozen:
		return metav1.ConditionFalse, v1alpha1.ReasonPartitionFreeze,
			"A partition freeze holds NoExecute tainting and eviction in the whole cluster"
	case g.halted:
		return metav1.ConditionFalse, v1alpha1.ReasonFullDisruption,
			"Every zone of the cluster is fully disrupted"
	case g.hold == disruption.HeldBreaker:
		maxUnhealthy := policy.DefaultMaxUnhealthy
		if p.Spec.MaxUnhealthy != nil {
			maxUnhealthy = *p.Spec.MaxUnhealthy
		}
		return metav1.ConditionFalse, v1alpha1.ReasonTooManyUnhealthy,
			fmt.Sprintf("%d of %d nodes are unhealthy, more than maxUnhealthy (%s)", st.UnhealthyNodes, st.Nodes, maxUnhealthy.String())
	case p.Spec.FullDisruption == v1alpha1.FullDisruptionHalt && len(full) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonFullDisruption,
			"No node is ready in zone(s) " + strings.Join(full, ", ") + ", which fullDisruption: Halt holds back"
	}
	return metav1.ConditionTrue, v1alpha1.ReasonAllowed, "NoExecute tainting and eviction proceed as the policy says"
}
