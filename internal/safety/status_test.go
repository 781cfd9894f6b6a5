package safety

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/maintenance"
)

func TestStatusCarriesAMarkOverToTheLocalClock(t *testing.T) {
	apiNow := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	markedAgo := func(age time.Duration) *corev1.Node {
		node := &corev1.Node{}
		node.Name = "n"
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			LastTransitionTime: metav1.NewTime(apiNow.Add(-age))}}
		return node
	}
	for _, tc := range []struct {
		name string
		// localAhead is how far this process's clock runs ahead of the
		// apiserver's.
		localAhead, age, want time.Duration
	}{
		{name: "clocks agree", age: 30 * time.Second, want: 30 * time.Second},
		{name: "local clock ten minutes ahead", localAhead: 10 * time.Minute, age: 30 * time.Second, want: 30 * time.Second},
		{name: "local clock ten minutes behind", localAhead: -10 * time.Minute, age: 30 * time.Second, want: 30 * time.Second},
		{name: "mark stamped ahead of the apiserver", age: -time.Second, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := apiNow.Add(tc.localAhead)
			m := &Model{skew: tc.localAhead}
			st := m.status(markedAgo(tc.age), health.Verdict{}, "", time.Time{}, maintenance.Window{}, false, now)
			if got := now.Sub(st.SilentSince); got != tc.want {
				t.Errorf("silent for %v by the local clock, want %v", got, tc.want)
			}
		})
	}
}
