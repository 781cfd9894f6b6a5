package reporter

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		// wantErrs are substrings the error must contain; none means valid.
		wantErrs []string
	}{
		{name: "minimal", cfg: Config{NodeName: testNode}},
		{name: "no name", cfg: Config{}, wantErrs: []string{"nodeName: must be set"}},
		{name: "bad name", cfg: Config{NodeName: "Node_A"}, wantErrs: []string{`nodeName "Node_A"`}},
		{
			name:     "bad labels",
			cfg:      Config{NodeName: testNode, Labels: map[string]string{"bad key!": "v", "k": "bad value!"}},
			wantErrs: []string{`labels: key "bad key!"`, `labels: value "bad value!" of "k"`},
		},
		{
			name: "bad taints",
			cfg: Config{NodeName: testNode, RegisterWithTaints: []corev1.Taint{
				{Key: "bad key!", Effect: corev1.TaintEffectNoSchedule},
				{Key: "k", Value: "bad value!", Effect: corev1.TaintEffectNoExecute},
				{Key: "k2", Effect: "Sometimes"},
			}},
			wantErrs: []string{`registerWithTaints: key "bad key!"`, `registerWithTaints: value "bad value!" of "k"`, `registerWithTaints: effect "Sometimes" of "k2"`},
		},
		{name: "negative lease duration", cfg: Config{NodeName: testNode, LeaseDurationSeconds: -1}, wantErrs: []string{"leaseDurationSeconds"}},
		{name: "fraction of 1", cfg: Config{NodeName: testNode, RenewIntervalFraction: 1}, wantErrs: []string{"renewIntervalFraction: must be in (0, 1)"}},
		{name: "negative fraction", cfg: Config{NodeName: testNode, RenewIntervalFraction: -0.1}, wantErrs: []string{"renewIntervalFraction"}},
		{
			name:     "negative frequencies",
			cfg:      Config{NodeName: testNode, NodeStatusUpdateFrequency: -time.Second, NodeStatusReportFrequency: -time.Second},
			wantErrs: []string{"nodeStatusUpdateFrequency", "nodeStatusReportFrequency"},
		},
		{name: "negative offset", cfg: Config{NodeName: testNode, StartOffset: -time.Second}, wantErrs: []string{"startOffset"}},
		{
			name: "allocatable above capacity",
			cfg: Config{
				NodeName:    testNode,
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			},
			wantErrs: []string{"allocatable: cpu 3 exceeds capacity 2"},
		},
		{
			name:     "negative capacity",
			cfg:      Config{NodeName: testNode, Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")}},
			wantErrs: []string{"capacity: memory must not be negative"},
		},
		{
			name:     "empty address",
			cfg:      Config{NodeName: testNode, Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP}}},
			wantErrs: []string{"addresses[0]"},
		},
		{name: "nil setter", cfg: Config{NodeName: testNode, Setters: []StatusSetter{nil}}, wantErrs: []string{"setters[0]: must not be nil"}},
		{
			name:     "every problem at once",
			cfg:      Config{LeaseDurationSeconds: -1, StartOffset: -1},
			wantErrs: []string{"nodeName", "leaseDurationSeconds", "startOffset"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(fake.NewClientset(), clocktesting.NewFakeClock(t0), tc.cfg)
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded, want an error with %q", tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestNewRequiresClientAndClock(t *testing.T) {
	if _, err := New(nil, clocktesting.NewFakeClock(t0), Config{NodeName: testNode}); err == nil {
		t.Error("New with a nil client succeeded")
	}
	if _, err := New(fake.NewClientset(), nil, Config{NodeName: testNode}); err == nil {
		t.Error("New with a nil clock succeeded")
	}
}

func TestNewAppliesKubeletDefaults(t *testing.T) {
	labels := map[string]string{"a": "b"}
	r, err := New(fake.NewClientset(), clocktesting.NewFakeClock(t0), Config{NodeName: testNode, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	labels["a"] = "changed"
	c := r.cfg
	if c.LeaseDurationSeconds != 40 || c.RenewIntervalFraction != 0.25 || c.renewInterval() != 10*time.Second {
		t.Errorf("lease %ds renewed every %v (fraction %v), want 40s every 10s", c.LeaseDurationSeconds, c.renewInterval(), c.RenewIntervalFraction)
	}
	if c.NodeStatusUpdateFrequency != 10*time.Second || c.NodeStatusReportFrequency != 5*time.Minute {
		t.Errorf("status computed every %v, reported every %v, want 10s and 5m", c.NodeStatusUpdateFrequency, c.NodeStatusReportFrequency)
	}
	if c.Labels["a"] != "b" {
		t.Errorf("the reporter shares the caller's labels")
	}
	if r.Health() == nil || len(c.Setters) != len(DefaultSetters(nil)) {
		t.Errorf("health %v and %d setters, want a Health and the default setters", r.Health(), len(c.Setters))
	}
	if r.NodeName() != testNode {
		t.Errorf("NodeName() = %q", r.NodeName())
	}
}
