package reporter

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultSetters(t *testing.T) {
	type want struct {
		status corev1.ConditionStatus
		reason string
	}
	tests := []struct {
		name    string
		health  func(h *Health)
		message string
		want    map[corev1.NodeConditionType]want
	}{
		{
			name:    "healthy",
			health:  func(*Health) {},
			message: MessageReady,
			want: map[corev1.NodeConditionType]want{
				corev1.NodeReady:          {corev1.ConditionTrue, ReasonKubeletReady},
				corev1.NodeMemoryPressure: {corev1.ConditionFalse, ReasonSufficientMemory},
				corev1.NodeDiskPressure:   {corev1.ConditionFalse, ReasonNoDiskPressure},
				corev1.NodePIDPressure:    {corev1.ConditionFalse, ReasonSufficientPID},
			},
		},
		{
			name:    "not ready, default message",
			health:  func(h *Health) { h.SetReady(false, "") },
			message: MessageNotReady,
			want: map[corev1.NodeConditionType]want{
				corev1.NodeReady: {corev1.ConditionFalse, ReasonKubeletNotReady},
			},
		},
		{
			name:    "not ready, own message",
			health:  func(h *Health) { h.SetReady(false, "PLEG is not healthy") },
			message: "PLEG is not healthy",
			want: map[corev1.NodeConditionType]want{
				corev1.NodeReady: {corev1.ConditionFalse, ReasonKubeletNotReady},
			},
		},
		{
			name:    "under every pressure",
			health:  func(h *Health) { h.SetPressure(true, true, true) },
			message: MessageReady,
			want: map[corev1.NodeConditionType]want{
				corev1.NodeReady:          {corev1.ConditionTrue, ReasonKubeletReady},
				corev1.NodeMemoryPressure: {corev1.ConditionTrue, ReasonInsufficientMemory},
				corev1.NodeDiskPressure:   {corev1.ConditionTrue, ReasonDiskPressure},
				corev1.NodePIDPressure:    {corev1.ConditionTrue, ReasonInsufficientPID},
			},
		},
		{
			name:    "disk pressure only",
			health:  func(h *Health) { h.SetPressure(false, true, false) },
			message: MessageReady,
			want: map[corev1.NodeConditionType]want{
				corev1.NodeMemoryPressure: {corev1.ConditionFalse, ReasonSufficientMemory},
				corev1.NodeDiskPressure:   {corev1.ConditionTrue, ReasonDiskPressure},
				corev1.NodePIDPressure:    {corev1.ConditionFalse, ReasonSufficientPID},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &Health{}
			tc.health(h)
			node := &corev1.Node{Status: corev1.NodeStatus{Capacity: DefaultCapacity()}}
			for _, set := range DefaultSetters(h) {
				if err := set(node, t0); err != nil {
					t.Fatal(err)
				}
			}
			if len(node.Status.Conditions) != 4 {
				t.Fatalf("%d conditions, want 4", len(node.Status.Conditions))
			}
			for typ, w := range tc.want {
				c := condition(node, typ)
				if c.Status != w.status || c.Reason != w.reason {
					t.Errorf("%s = %s/%s, want %s/%s", typ, c.Status, c.Reason, w.status, w.reason)
				}
			}
			if got := condition(node, corev1.NodeReady).Message; got != tc.message {
				t.Errorf("Ready message = %q, want %q", got, tc.message)
			}
			if node.Status.NodeInfo != DefaultNodeInfo() {
				t.Errorf("node info = %+v", node.Status.NodeInfo)
			}
		})
	}
}

func TestReadyNeedsCapacity(t *testing.T) {
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: DefaultCapacity()[corev1.ResourceCPU]}}}
	if err := ReadyCondition(nil)(node, t0); err != nil {
		t.Fatal(err)
	}
	c := condition(node, corev1.NodeReady)
	if want := "missing node capacity for resources: memory, pods"; c.Status != corev1.ConditionFalse || c.Message != want {
		t.Errorf("Ready = %s %q, want False %q", c.Status, c.Message, want)
	}
}

func TestSetConditionReplacesByType(t *testing.T) {
	node := &corev1.Node{}
	SetCondition(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse})
	SetCondition(node, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse})
	SetCondition(node, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
	if len(node.Status.Conditions) != 2 || condition(node, corev1.NodeReady).Status != corev1.ConditionTrue {
		t.Errorf("conditions = %+v, want Ready True and DiskPressure", node.Status.Conditions)
	}
}

// TestSetConditionDropsTimes checks what tells the reporter a condition set
// in this pass from another writer's: the one set has no times, however
// the setter filled them in.
func TestSetConditionDropsTimes(t *testing.T) {
	stored := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}
	node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{stored}}}
	SetCondition(node, stored)
	if c := condition(node, corev1.NodeReady); !c.LastHeartbeatTime.IsZero() || !c.LastTransitionTime.IsZero() {
		t.Errorf("Ready times = %v, %v, want none", c.LastHeartbeatTime, c.LastTransitionTime)
	}
}

func TestHealthIsSafeForConcurrentUse(_ *testing.T) {
	h := &Health{}
	set := DefaultSetters(h)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 100 {
				h.SetReady((i+j)%2 == 0, "flip")
				h.SetPressure(j%2 == 0, false, j%3 == 0)
			}
		})
		wg.Go(func() {
			for range 100 {
				node := &corev1.Node{Status: corev1.NodeStatus{Capacity: DefaultCapacity()}}
				for _, s := range set {
					_ = s(node, t0)
				}
			}
		})
	}
	wg.Wait()
}

func TestNilHealthIsHealthy(t *testing.T) {
	var h *Health
	if ready, _ := h.Ready(); !ready {
		t.Error("nil Health is not ready")
	}
	if m, d, p := h.Pressure(); m || d || p {
		t.Error("nil Health is under pressure")
	}
}
