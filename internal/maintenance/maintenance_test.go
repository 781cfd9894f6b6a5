package maintenance

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func TestOf(t *testing.T) {
	const grace = time.Hour
	ready := func(s corev1.ConditionStatus, at time.Time) corev1.NodeCondition {
		return testobj.Condition(corev1.NodeReady, s, at)
	}
	tests := []struct {
		name  string
		conds []corev1.NodeCondition
		grace time.Duration
		skew  time.Duration
		want  Window
	}{
		{
			name:  "no maintenance condition",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0)},
		},
		{
			name:  "maintenance condition False",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0), testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionFalse, t0)},
		},
		{
			name: "planned maintenance and a drain in progress do not excuse silence",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0),
				testobj.Condition(corev1.NodeMaintenancePlanned, corev1.ConditionTrue, t0),
				testobj.Condition(corev1.NodeDrainInProgress, corev1.ConditionTrue, t0)},
		},
		{
			name:  "ready node in maintenance: nothing held yet, no end",
			conds: []corev1.NodeCondition{ready(corev1.ConditionTrue, t0), testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0.Add(time.Minute))},
			want:  Window{Condition: corev1.NodeMaintenanceInProgress, Since: t0.Add(time.Minute)},
		},
		{
			name:  "node that never reported: nothing held yet",
			conds: []corev1.NodeCondition{testobj.Condition(corev1.NodeDrained, corev1.ConditionTrue, t0)},
			want:  Window{Condition: corev1.NodeDrained, Since: t0},
		},
		{
			name:  "silent after its maintenance began: grace from the mark",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0.Add(90*time.Minute)), testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0)},
			want:  Window{Condition: corev1.NodeMaintenanceInProgress, Since: t0, Until: t0.Add(150 * time.Minute)},
		},
		{
			name:  "failed before its maintenance was declared: grace from the declaration",
			conds: []corev1.NodeCondition{ready(corev1.ConditionFalse, t0), testobj.Condition(corev1.NodeGracefulNodeShutdownInProgress, corev1.ConditionTrue, t0.Add(10*time.Minute))},
			want:  Window{Condition: corev1.NodeGracefulNodeShutdownInProgress, Since: t0.Add(10 * time.Minute), Until: t0.Add(70 * time.Minute)},
		},
		{
			name: "several conditions: the earliest dates the window",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0.Add(time.Minute)),
				testobj.Condition(corev1.NodeGracefulNodeShutdownInProgress, corev1.ConditionTrue, t0.Add(30*time.Second)),
				testobj.Condition(corev1.NodeDrained, corev1.ConditionTrue, t0),
				testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, time.Time{})},
			want: Window{Condition: corev1.NodeDrained, Since: t0, Until: t0.Add(61 * time.Minute)},
		},
		{
			name:  "condition without a transition time: grace from the mark",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0), testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, time.Time{})},
			want:  Window{Condition: corev1.NodeMaintenanceInProgress, Until: t0.Add(grace)},
		},
		{
			name:  "times carried to the local clock",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0), testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0.Add(-time.Minute))},
			skew:  3 * time.Second,
			want:  Window{Condition: corev1.NodeMaintenanceInProgress, Since: t0.Add(-time.Minute + 3*time.Second), Until: t0.Add(grace + 3*time.Second)},
		},
		{
			name:  "grace 0 turns maintenance off",
			conds: []corev1.NodeCondition{ready(corev1.ConditionUnknown, t0), testobj.Condition(corev1.NodeMaintenanceInProgress, corev1.ConditionTrue, t0)},
			grace: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := grace
			if tt.grace != 0 {
				g = tt.grace
			}
			got := Of(testobj.Node("n1", testobj.Conditions(tt.conds...)), g, tt.skew)
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
