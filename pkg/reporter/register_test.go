package reporter

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestRegisterCreatesNode(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	addresses := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.1.2.3"},
		{Type: corev1.NodeHostName, Address: testNode},
	}
	images := []corev1.ContainerImage{
		{Names: []string{"registry.example/app@sha256:0123", "registry.example/app:v2"}, SizeBytes: 200 << 20},
		{Names: []string{"registry.example/pause:3.10"}, SizeBytes: 300 << 10},
	}
	tests := []struct {
		name            string
		cfg             Config
		wantLabels      map[string]string
		wantCapacity    corev1.ResourceList
		wantAllocatable corev1.ResourceList
		wantAddresses   []corev1.NodeAddress
		wantImages      []corev1.ContainerImage
		wantTaints      []corev1.Taint
	}{
		{
			name: "defaults",
			wantLabels: map[string]string{
				corev1.LabelHostname: testNode, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			},
			wantCapacity:    DefaultCapacity(),
			wantAllocatable: DefaultCapacity(),
		},
		{
			name: "configured",
			cfg: Config{
				Labels: map[string]string{
					"topology.kubernetes.io/zone": "zone-b", corev1.LabelArchStable: "arm64",
				},
				Capacity:    capacity,
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")},
				Addresses:   addresses,
				Images:      images,
				RegisterWithTaints: []corev1.Taint{
					{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				},
			},
			wantLabels: map[string]string{
				corev1.LabelHostname: testNode, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64",
				"topology.kubernetes.io/zone": "zone-b",
			},
			wantCapacity:    capacity,
			wantAllocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")},
			wantAddresses:   addresses,
			wantImages:      images,
			wantTaints:      []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			h.start()
			h.settle(2)

			node := h.node()
			if !maps.Equal(node.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", node.Labels, tc.wantLabels)
			}
			if !equality.Semantic.DeepEqual(node.Status.Capacity, tc.wantCapacity) {
				t.Errorf("capacity = %v, want %v", node.Status.Capacity, tc.wantCapacity)
			}
			if !equality.Semantic.DeepEqual(node.Status.Allocatable, tc.wantAllocatable) {
				t.Errorf("allocatable = %v, want %v", node.Status.Allocatable, tc.wantAllocatable)
			}
			if !slices.Equal(node.Status.Addresses, tc.wantAddresses) {
				t.Errorf("addresses = %v, want %v", node.Status.Addresses, tc.wantAddresses)
			}
			if !equality.Semantic.DeepEqual(node.Status.Images, tc.wantImages) {
				t.Errorf("images = %v, want %v", node.Status.Images, tc.wantImages)
			}
			if !equality.Semantic.DeepEqual(node.Spec.Taints, tc.wantTaints) {
				t.Errorf("taints = %v, want %v", node.Spec.Taints, tc.wantTaints)
			}
			if node.Status.NodeInfo != DefaultNodeInfo() {
				t.Errorf("node info = %+v, want %+v", node.Status.NodeInfo, DefaultNodeInfo())
			}
			var types []corev1.NodeConditionType
			for _, c := range node.Status.Conditions {
				types = append(types, c.Type)
				if !c.LastHeartbeatTime.Time.Equal(t0) || !c.LastTransitionTime.Time.Equal(t0) {
					t.Errorf("%s times = %v, %v, want both %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime, t0)
				}
			}
			want := []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}
			if !slices.Equal(types, want) {
				t.Errorf("conditions = %v, want %v", types, want)
			}
		})
	}
}

func TestRegisterAdoptsExistingNode(t *testing.T) {
	existing := existingNode()
	existing.Labels = map[string]string{"owner": "someone-else"}
	h := newHarness(t, Config{
		Labels:             map[string]string{"mine": "yes"},
		RegisterWithTaints: []corev1.Taint{{Key: "mine", Effect: corev1.TaintEffectNoSchedule}},
	}, existing, ownedLease())
	h.start()
	h.settle(2)

	// The lease loop and the status loop write concurrently: compare counts.
	got := writes(h.calls())
	if len(got) != 3 || count(got, "create", "nodes") != 1 || count(got, "patch", "nodes") != 1 || count(got, "update", "leases") != 1 {
		t.Fatalf("writes = %+v, want a node create (refused), a status patch and a lease update", got)
	}
	node := h.node()
	if node.UID != "uid-existing" || !maps.Equal(node.Labels, existing.Labels) || len(node.Spec.Taints) > 0 {
		t.Errorf("node = %s with labels %v and taints %v, want the existing node untouched", node.UID, node.Labels, node.Spec.Taints)
	}
}

func TestRegisterBacksOff(t *testing.T) {
	h := newHarness(t, Config{})
	h.failN("create", "nodes", 4, errors.New("connection refused"))
	h.start()
	h.settle(1)
	if n := count(h.calls(), "create", "nodes"); n != 1 {
		t.Fatalf("%d node creates at start, want 1", n)
	}
	for _, wait := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		h.step(wait-time.Millisecond, 1)
		if got := h.calls(); len(got) != 0 {
			t.Fatalf("calls before %v = %+v, want none", wait, got)
		}
		h.clk.Step(time.Millisecond)
		if wait < 800*time.Millisecond {
			h.settle(1)
			if n := count(h.calls(), "create", "nodes"); n != 1 {
				t.Fatalf("%d node creates after %v, want 1", n, wait)
			}
		}
	}
	// The fifth try succeeds and the loops start.
	h.settle(2)
	got := h.calls()
	if n := count(got, "create", "nodes"); n != 1 {
		t.Fatalf("%d node creates, want 1", n)
	}
	if n := count(got, "create", "leases"); n != 1 {
		t.Fatalf("%d lease creates once registered, want 1", n)
	}
	if ready := condition(h.node(), corev1.NodeReady); !ready.LastTransitionTime.Time.Equal(t0.Add(1500 * time.Millisecond)) {
		t.Errorf("Ready since %v, want the time of the successful registration", ready.LastTransitionTime)
	}
}
