package maintenance

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, at time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)}
}

func node(conds ...corev1.NodeCondition) *corev1.Node {
	n := &corev1.Node{}
	n.Status.Conditions = conds
	return n
}

func TestOf(t *testing.T) {
	const grace = time.Hour
	ready := func(s corev1.ConditionStatus, at time.Time) corev1.NodeCondition {
		return cond(corev1.NodeReady, s, at)
	}
	tests := []struct {
		name  string
		node  *corev1.Node
		grace time.Duration
		skew  time.Duration
		want  Window
	}{
		{
			name: "no maintenance condition",
			node: node(ready(corev1.ConditionUnknown, t0)),
		},
		{
			name: "maintenance condition False",
			node: node(ready(corev1.ConditionUnknown, t0), cond(corev1.NodeMaintenanceInProgress, corev1.ConditionFalse, t0)),
		},
		{
			name: "planned maintenance and a drain in progress do not excuse silence",
			node: node(ready(corev1.ConditionUnknown, t0),
				cond(corev1.NodeMaintenancePlanned, corev1.ConditionTrue, t0),
				cond(corev1.NodeDrainInProgress, corev1.ConditionTrue, t0)),
		},
		{
			name: "ready node in maintenance: nothing held yet, no end",
			node: node(ready(corev1.ConditionTrue, t0), cond(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0.Add(time.Minute))),
			want: Window{Condition: corev1.NodeMaintenanceInProgress, Since: t0.Add(time.Minute)},
		},
		{
			name: "node that never reported: nothing held yet",
			node: node(cond(corev1.NodeDrained, corev1.ConditionTrue, t0)),
			want: Window{Condition: corev1.NodeDrained, Since: t0},
		},
		{
			name: "silent after its maintenance began: grace from the mark",
			node: node(ready(corev1.ConditionUnknown, t0.Add(90*time.Minute)), cond(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0)),
			want: Window{Condition: corev1.NodeMaintenanceInProgress, Since: t0, Until: t0.Add(150 * time.Minute)},
		},
		{
			name: "failed before its maintenance was declared: grace from the declaration",
			node: node(ready(corev1.ConditionFalse, t0), cond(corev1.NodeGracefulNodeShutdownInProgress, corev1.ConditionTrue, t0.Add(10*time.Minute))),
			want: Window{Condition: corev1.NodeGracefulNodeShutdownInProgress, Since: t0.Add(10 * time.Minute), Until: t0.Add(70 * time.Minute)},
		},
		{
			name: "several conditions: the earliest dates the window",
			node: node(ready(corev1.ConditionUnknown, t0.Add(time.Minute)),
				cond(corev1.NodeGracefulNodeShutdownInProgress, corev1.ConditionTrue, t0.Add(30*time.Second)),
				cond(corev1.NodeDrained, corev1.ConditionTrue, t0),
				cond(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, time.Time{})),
			want: Window{Condition: corev1.NodeDrained, Since: t0, Until: t0.Add(61 * time.Minute)},
		},
		{
			name: "condition without a transition time: grace from the mark",
			node: node(ready(corev1.ConditionUnknown, t0), cond(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, time.Time{})),
			want: Window{Condition: corev1.NodeMaintenanceInProgress, Until: t0.Add(grace)},
		},
		{
			name: "times carried to the local clock",
			node: node(ready(corev1.ConditionUnknown, t0), cond(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0.Add(-time.Minute))),
			skew: 3 * time.Second,
			want: Window{Condition: corev1.NodeMaintenanceInProgress, Since: t0.Add(-time.Minute + 3*time.Second), Until: t0.Add(grace + 3*time.Second)},
		},
		{
			name:  "grace 0 turns maintenance off",
			node:  node(ready(corev1.ConditionUnknown, t0), cond(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0)),
			grace: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := grace
			if tt.grace != 0 {
				g = tt.grace
			}
			got := Of(tt.node, g, tt.skew)
			if got != tt.want {
				t.Errorf("Of() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWindowHolds(t *testing.T) {
	until := t0.Add(time.Hour)
	tests := []struct {
		name string
		w    Window
		now  time.Time
		want bool
	}{
		{"not in maintenance", Window{}, t0, false},
		{"ready node in maintenance", Window{Condition: corev1.NodeDrained, Since: t0}, t0.Add(1000 * time.Hour), true},
		{"within the grace", Window{Condition: corev1.NodeDrained, Until: until}, until.Add(-time.Nanosecond), true},
		{"the grace's end belongs to the normal timeline", Window{Condition: corev1.NodeDrained, Until: until}, until, false},
		{"after the grace", Window{Condition: corev1.NodeDrained, Until: until}, until.Add(time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.w.Holds(tt.now); got != tt.want {
				t.Errorf("Holds(%v) = %v, want %v", tt.now, got, tt.want)
			}
		})
	}
}
