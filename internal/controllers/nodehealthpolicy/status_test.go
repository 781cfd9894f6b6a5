package nodehealthpolicy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var (
	t0       = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	now      = metav1.NewTime(t0)
	defaults = policy.Settings{
		Grace:              health.Grace{Monitor: 50 * time.Second, Startup: time.Minute},
		PodEvictionTimeout: 5 * time.Minute,
		Disruption:         disruption.Pool{Rates: disruption.Rates{Normal: 0.1}, UnhealthyZoneThreshold: 0.55},
	}
)

func pol(name string, age time.Duration, labels map[string]string) *v1alpha1.NodeHealthPolicy {
	return &v1alpha1.NodeHealthPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3, CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       v1alpha1.NodeHealthPolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: labels}},
	}
}

func condition(t *testing.T, st v1alpha1.NodeHealthPolicyStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	return *c
}

func TestStatusCountsTheNodesThatFollowThePolicy(t *testing.T) {
	gpu := map[string]string{"gpu": "true"}
	older, p := pol("older", time.Hour, map[string]string{"zone": "a"}), pol("gpu", time.Minute, gpu)
	set := policy.NewSet(defaults, []v1alpha1.NodeHealthPolicy{*older, *p})
	nodes := []corev1.Node{
		*testobj.Node("g1", testobj.Ready(corev1.ConditionTrue), testobj.Labels(gpu)),
		*testobj.Node("g2", testobj.Ready(corev1.ConditionUnknown), testobj.Labels(gpu)),
		*testobj.Node("g3", testobj.Ready(corev1.ConditionTrue), testobj.Labels(map[string]string{"gpu": "true", "zone": "a"})), // follows older
		*testobj.Node("other", testobj.Ready(corev1.ConditionTrue)),
	}
	g := guardView{zones: map[string]disruption.ZoneSnapshot{
		"r/z2": {Counts: disruption.Counts{Ready: 0, NotReady: 1}, State: disruption.ZoneFullDisruption},
		"r/z1": {Counts: disruption.Counts{Ready: 1}, State: disruption.ZoneNormal},
	}}
	st := computeStatus(p, set, nodes, g, now)

	if st.Nodes != 2 || st.HealthyNodes != 1 || st.UnhealthyNodes != 1 || st.ObservedGeneration != 3 {
		t.Fatalf("counts: %+v", st)
	}
	if len(st.Zones) != 2 || st.Zones[0].Name != "r/z1" || st.Zones[1].State != "FullDisruption" {
		t.Fatalf("zones: %+v", st.Zones)
	}
	if c := condition(t, st, v1alpha1.ConditionConflict); c.Status != metav1.ConditionTrue ||
		c.Reason != v1alpha1.ReasonOverlap || !strings.Contains(c.Message, "1 follow NodeHealthPolicy older") {
		t.Fatalf("Conflict: %+v", c)
	}
	if c := condition(t, st, v1alpha1.ConditionEvictionAllowed); c.Status != metav1.ConditionTrue {
		t.Fatalf("EvictionAllowed with Evict on a full zone: %+v", c)
	}
	if c := condition(t, st, ConditionAccepted); c.Status != metav1.ConditionTrue {
		t.Fatalf("Accepted: %+v", c)
	}
}

func TestStatusSaysWhyEvictionIsBlocked(t *testing.T) {
	full := map[string]disruption.ZoneSnapshot{"r/z": {Counts: disruption.Counts{NotReady: 3}, State: disruption.ZoneFullDisruption}}
	tests := []struct {
		name   string
		mutate func(*v1alpha1.NodeHealthPolicy)
		guard  guardView
		reason string
	}{
		{"allowed", nil, guardView{}, v1alpha1.ReasonAllowed},
		{"paused first", func(p *v1alpha1.NodeHealthPolicy) { p.Spec.PauseRequests = []string{"upgrade"} },
			guardView{hold: disruption.HeldPaused, frozen: true}, v1alpha1.ReasonPaused},
		{"freeze", nil, guardView{frozen: true}, v1alpha1.ReasonPartitionFreeze},
		{"every zone down", nil, guardView{halted: true}, v1alpha1.ReasonFullDisruption},
		{"breaker", func(p *v1alpha1.NodeHealthPolicy) { p.Spec.MaxUnhealthy = ptr.To(intstr.FromInt32(1)) },
			guardView{hold: disruption.HeldBreaker}, v1alpha1.ReasonTooManyUnhealthy},
		{"halted zone", func(p *v1alpha1.NodeHealthPolicy) { p.Spec.FullDisruption = v1alpha1.FullDisruptionHalt },
			guardView{zones: full}, v1alpha1.ReasonFullDisruption},
		{"evicted zone", nil, guardView{zones: full}, v1alpha1.ReasonAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pol("p", 0, nil)
			if tt.mutate != nil {
				tt.mutate(p)
			}
			set := policy.NewSet(defaults, []v1alpha1.NodeHealthPolicy{*p})
			c := condition(t, computeStatus(p, set, nil, tt.guard, now), v1alpha1.ConditionEvictionAllowed)
			if c.Reason != tt.reason || (c.Status == metav1.ConditionTrue) != (tt.reason == v1alpha1.ReasonAllowed) {
				t.Fatalf("EvictionAllowed = %s/%s (%s), want reason %s", c.Status, c.Reason, c.Message, tt.reason)
			}
		})
	}
}

func TestStatusOfAPolicyNotInForce(t *testing.T) {
	p := pol("long", 0, nil)
	p.Spec.NodeMonitorGracePeriod = &metav1.Duration{Duration: time.Hour}
	p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionEvictionAllowed, Status: metav1.ConditionTrue, Reason: "Allowed"}}
	set := policy.NewSet(defaults, []v1alpha1.NodeHealthPolicy{*p})
	st := computeStatus(p, set, []corev1.Node{*testobj.Node("n", testobj.Ready(corev1.ConditionTrue))}, guardView{}, now)
	if c := condition(t, st, ConditionAccepted); c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalid ||
		!strings.Contains(c.Message, "must be greater than nodeMonitorGracePeriod") {
		t.Fatalf("Accepted: %+v", c)
	}
	if meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionEvictionAllowed) != nil || st.Nodes != 0 {
		t.Fatalf("a policy not in force reports a pool: %+v", st)
	}
}
