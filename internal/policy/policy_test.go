package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

var (
	t0       = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	defaults = Settings{
		Grace:              health.Grace{Monitor: 50 * time.Second, Startup: time.Minute},
		PodEvictionTimeout: 5 * time.Minute,
		Disruption: disruption.Pool{
			Rates:                  disruption.Rates{Normal: 0.1, Secondary: 0.01, LargeClusterSizeThreshold: 50},
			UnhealthyZoneThreshold: 0.55,
		},
	}
)

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func newPolicy(name string, age time.Duration, labels map[string]string, spec v1alpha1.NodeHealthPolicySpec) v1alpha1.NodeHealthPolicy {
	spec.NodeSelector = metav1.LabelSelector{MatchLabels: labels}
	return v1alpha1.NodeHealthPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       spec,
	}
}

func TestResolveTakesUnsetFieldsFromTheDefaults(t *testing.T) {
	p := newPolicy("gpu", 0, nil, v1alpha1.NodeHealthPolicySpec{
		NodeStartupGracePeriod: duration(10 * time.Minute),
		MaintenanceGracePeriod: duration(3 * time.Hour),
		NodeEvictionRate:       ptr.To(1.0),
		FullDisruption:         v1alpha1.FullDisruptionHalt,
		PauseRequests:          []string{"maintenance"},
	})
	got, err := Resolve(defaults, &p)
	if err != nil {
		t.Fatal(err)
	}
	want := defaults
	want.Pool = "gpu"
	want.Grace.Startup = 10 * time.Minute
	want.MaintenanceGrace = 3 * time.Hour
	want.Disruption.Normal = 1
	want.Disruption.HaltFullZones = true
	want.Disruption.Paused = true
	if got.Disruption.MaxUnhealthy == nil || *got.Disruption.MaxUnhealthy != DefaultMaxUnhealthy {
		t.Fatalf("MaxUnhealthy = %v, want the default %v", got.Disruption.MaxUnhealthy, DefaultMaxUnhealthy)
	}
	got.Disruption.MaxUnhealthy = nil
	if got != want {
		t.Fatalf("Resolve:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveRefusesWhatOnlyTheFlagsMakeInvalid(t *testing.T) {
	tests := []struct {
		name string
		spec v1alpha1.NodeHealthPolicySpec
		want string
	}{
		{"grace not below the flags' eviction timeout",
			v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: duration(10 * time.Minute), NodeStartupGracePeriod: duration(10 * time.Minute)},
			"podEvictionTimeout (5m0s) must be greater than nodeMonitorGracePeriod (10m0s)"},
		{"startup grace set below the grace",
			v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: duration(2 * time.Minute), NodeStartupGracePeriod: duration(time.Minute)},
			"nodeStartupGracePeriod (1m0s) must be at least nodeMonitorGracePeriod (2m0s)"},
		{"negative maintenance grace", v1alpha1.NodeHealthPolicySpec{MaintenanceGracePeriod: duration(-time.Second)},
			"maintenanceGracePeriod (-1s) must not be negative"},
		{"bad maxUnhealthy", v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: ptr.To(intstr.FromString("lots"))}, "maxUnhealthy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPolicy("p", 0, nil, tt.spec)
			if _, err := Resolve(defaults, &p); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Resolve error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestResolveDerivesTheStartupGrace: a policy that sets a grace above the
// flags' startup grace, and no startup grace of its own, gives a starting
// node its grace; it is not refused for what it does not say.
func TestResolveDerivesTheStartupGrace(t *testing.T) {
	for _, tt := range []struct {
		name          string
		grace, wanted time.Duration
	}{
		{"above the flags' startup grace", 2 * time.Minute, 2 * time.Minute},
		{"below it", 30 * time.Second, defaults.Grace.Startup},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPolicy("p", 0, nil, v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: duration(tt.grace)})
			got, err := Resolve(defaults, &p)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got.Grace.Startup != tt.wanted {
				t.Fatalf("startup grace %v, want %v", got.Grace.Startup, tt.wanted)
			}
		})
	}
}

func TestSetPicksTheOldestPolicyThenTheFirstByName(t *testing.T) {
	gpu := map[string]string{"gpu": "true"}
	set := NewSet(defaults, []v1alpha1.NodeHealthPolicy{
		newPolicy("young", time.Minute, gpu, v1alpha1.NodeHealthPolicySpec{}),
		newPolicy("old-b", time.Hour, gpu, v1alpha1.NodeHealthPolicySpec{}),
		newPolicy("old-a", time.Hour, gpu, v1alpha1.NodeHealthPolicySpec{}),
		newPolicy("everything", 0, nil, v1alpha1.NodeHealthPolicySpec{}),
	})
	if got := set.For(map[string]string{"gpu": "true", "zone": "a"}).Pool; got != "old-a" {
		t.Fatalf("a gpu node follows %q, want old-a", got)
	}
	if got := set.For(map[string]string{"zone": "a"}).Pool; got != "everything" {
		t.Fatalf("another node follows %q, want everything (an empty selector selects every node)", got)
	}
	if !set.Selects("young", gpu) || set.Selects("young", map[string]string{}) {
		t.Fatal("Selects disagrees with the selector")
	}
	var names []string
	for _, p := range set.Pools() {
		names = append(names, p.Pool)
	}
	if strings.Join(names, ",") != "old-a,old-b,young,everything" {
		t.Fatalf("precedence %v", names)
	}
}

// TestSetHoldsTheNodesOfInvalidPolicies: a policy invalid with the flags
// still claims its nodes, on the flags' timing, and holds them; one whose
// selector does not parse claims none.
func TestSetHoldsTheNodesOfInvalidPolicies(t *testing.T) {
	bad := newPolicy("bad", time.Hour, nil, v1alpha1.NodeHealthPolicySpec{})
	bad.Spec.NodeSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}
	tooLong := newPolicy("too-long", time.Hour, map[string]string{"k": "v"},
		v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: duration(time.Hour)})
	set := NewSet(defaults, []v1alpha1.NodeHealthPolicy{bad, tooLong})
	if len(set.Invalid) != 2 || set.Invalid["bad"] == nil || set.Invalid["too-long"] == nil {
		t.Fatalf("Invalid = %v", set.Invalid)
	}
	got := set.For(map[string]string{"k": "v"})
	if got.Pool != "too-long" || got.Grace != defaults.Grace || !got.Disruption.Invalid {
		t.Fatalf("a node selected by a policy invalid with the flags follows %+v, want the flags' grace, held", got)
	}
	if got := set.For(map[string]string{"k": "w"}); got.Pool != "" || got.Disruption.Invalid {
		t.Fatalf("a node no valid selector selects follows %+v, want the defaults", got)
	}
}
