package reporter

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func TestStampConditions(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name    string
		prev    []corev1.NodeCondition
		next    corev1.NodeCondition
		wantLTT metav1.Time
		wantLHT metav1.Time
	}{
		{
			name:    "new condition transitions now",
			next:    corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			wantLTT: metav1.NewTime(now), wantLHT: metav1.NewTime(now),
		},
		{
			name:    "same status keeps its transition time",
			prev:    []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: at(time.Minute), LastTransitionTime: at(0)}},
			next:    corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			wantLTT: at(0), wantLHT: metav1.NewTime(now),
		},
		{
			name:    "new reason alone is no transition",
			prev:    []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "A", LastTransitionTime: at(0)}},
			next:    corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "B"},
			wantLTT: at(0), wantLHT: metav1.NewTime(now),
		},
		{
			name:    "status change transitions now",
			prev:    []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: at(0)}},
			next:    corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			wantLTT: metav1.NewTime(now), wantLHT: metav1.NewTime(now),
		},
		{
			name: "a setter's own times are overridden",
			prev: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: at(0)}},
			next: corev1.NodeCondition{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: at(-time.Hour), LastTransitionTime: at(time.Minute),
			},
			wantLTT: at(0), wantLHT: metav1.NewTime(now),
		},
		{
			name:    "a condition left as it was keeps its times",
			prev:    []corev1.NodeCondition{{Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue, LastHeartbeatTime: at(time.Minute), LastTransitionTime: at(0)}},
			next:    corev1.NodeCondition{Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue, LastHeartbeatTime: at(time.Minute), LastTransitionTime: at(0)},
			wantLTT: at(0), wantLHT: at(time.Minute),
		},
		{
			name: "a second condition of a type left as it was keeps its times",
			prev: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: at(time.Minute), LastTransitionTime: at(0)},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: at(2 * time.Minute), LastTransitionTime: at(time.Minute)},
			},
			next:    corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: at(2 * time.Minute), LastTransitionTime: at(time.Minute)},
			wantLTT: at(time.Minute), wantLHT: at(2 * time.Minute),
		},
		{
			name:    "other types do not count",
			prev:    []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastTransitionTime: at(0)}},
			next:    corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			wantLTT: metav1.NewTime(now), wantLHT: metav1.NewTime(now),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := []corev1.NodeCondition{tc.next}
			stampConditions(tc.prev, next, now)
			if !next[0].LastTransitionTime.Equal(&tc.wantLTT) {
				t.Errorf("lastTransitionTime = %v, want %v", next[0].LastTransitionTime, tc.wantLTT)
			}
			if !next[0].LastHeartbeatTime.Equal(&tc.wantLHT) {
				t.Errorf("lastHeartbeatTime = %v, want %v", next[0].LastHeartbeatTime, tc.wantLHT)
			}
		})
	}
}

// TestForeignConditionsAreLeftAlone runs the default setters over a Node
// carrying, besides the reporter's conditions, one another writer set: the
// reporter must stamp its own, Ready among them, and neither stamp nor
// patch the other, whatever it says and however old its times are.
func TestForeignConditionsAreLeftAlone(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name    string
		foreign corev1.NodeCondition
		// notReady makes the reporter's own conditions change in the same
		// pass.
		notReady bool
		// first puts the foreign condition before the reporter's.
		first bool
	}{
		{
			name: "maintenance operator's MaintenanceInProgress",
			foreign: corev1.NodeCondition{Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue,
				Reason: "Reboot", LastHeartbeatTime: at(10 * time.Minute), LastTransitionTime: at(5 * time.Minute)},
		},
		{
			name: "Drained, first, while Ready turns False",
			foreign: corev1.NodeCondition{Type: corev1.NodeDrained, Status: corev1.ConditionTrue,
				LastHeartbeatTime: at(20 * time.Minute), LastTransitionTime: at(20 * time.Minute)},
			notReady: true, first: true,
		},
		{
			name: "GracefulNodeShutdownInProgress long unrefreshed",
			foreign: corev1.NodeCondition{Type: corev1.NodeGracefulNodeShutdownInProgress, Status: corev1.ConditionFalse,
				LastHeartbeatTime: at(-24 * time.Hour), LastTransitionTime: at(-48 * time.Hour)},
		},
		{
			name: "cloud provider's NetworkUnavailable",
			foreign: corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse,
				Reason: "RouteCreated", LastHeartbeatTime: at(time.Minute), LastTransitionTime: at(time.Minute)},
			notReady: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(fake.NewClientset(), clocktesting.NewFakeClock(now), Config{NodeName: testNode})
			if err != nil {
				t.Fatal(err)
			}
			node, err := r.initialNode(t0)
			if err != nil {
				t.Fatal(err)
			}
			if tc.first {
				node.Status.Conditions = append([]corev1.NodeCondition{tc.foreign}, node.Status.Conditions...)
			} else {
				node.Status.Conditions = append(node.Status.Conditions, tc.foreign)
			}
			r.Health().SetReady(!tc.notReady, "")

			next, err := r.computeNode(node, now)
			if err != nil {
				t.Fatal(err)
			}
			stamp := metav1.NewTime(now)
			if got := condition(next, tc.foreign.Type); !equality.Semantic.DeepEqual(got, tc.foreign) {
				t.Errorf("%s = %+v, want it left as %+v", tc.foreign.Type, got, tc.foreign)
			}
			ready := condition(next, corev1.NodeReady)
			if !ready.LastHeartbeatTime.Equal(&stamp) {
				t.Errorf("Ready lastHeartbeatTime = %v, want %v", ready.LastHeartbeatTime, stamp)
			}
			wantLTT := at(0)
			if tc.notReady {
				wantLTT = stamp
			}
			if !ready.LastTransitionTime.Equal(&wantLTT) {
				t.Errorf("Ready lastTransitionTime = %v, want %v", ready.LastTransitionTime, wantLTT)
			}

			patch, err := statusPatch(&node.Status, &next.Status)
			if err != nil {
				t.Fatal(err)
			}
			var fields struct {
				Status struct {
					Conditions []corev1.NodeCondition `json:"conditions"`
				} `json:"status"`
			}
			if err := json.Unmarshal(patch, &fields); err != nil {
				t.Fatalf("patch %s: %v", patch, err)
			}
			var patched []corev1.NodeConditionType
			for _, c := range fields.Status.Conditions {
				patched = append(patched, c.Type)
			}
			if slices.Contains(patched, tc.foreign.Type) {
				t.Errorf("patch %s writes %s, want it left out", patch, tc.foreign.Type)
			}
			if !slices.Contains(patched, corev1.NodeReady) {
				t.Errorf("patch %s does not write Ready", patch)
			}
		})
	}
}

func readyStatus() corev1.NodeStatus {
	return corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: ReasonKubeletReady, LastHeartbeatTime: at(0), LastTransitionTime: at(0)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: at(0), LastTransitionTime: at(0)},
		},
	}
}

func TestStatusChanged(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *corev1.NodeStatus)
		want   bool
	}{
		{name: "identical", change: func(*corev1.NodeStatus) {}},
		{name: "heartbeat only", change: func(s *corev1.NodeStatus) {
			for i := range s.Conditions {
				s.Conditions[i].LastHeartbeatTime = at(time.Hour)
			}
		}},
		{name: "conditions reordered", change: func(s *corev1.NodeStatus) { slices.Reverse(s.Conditions) }},
		{name: "quantity written differently", change: func(s *corev1.NodeStatus) {
			s.Capacity[corev1.ResourceCPU] = resource.MustParse("2000m")
		}},
		{name: "condition status", want: true, change: func(s *corev1.NodeStatus) { s.Conditions[0].Status = corev1.ConditionFalse }},
		{name: "condition reason", want: true, change: func(s *corev1.NodeStatus) { s.Conditions[0].Reason = "Other" }},
		{name: "condition message", want: true, change: func(s *corev1.NodeStatus) { s.Conditions[0].Message = "hello" }},
		{name: "transition time", want: true, change: func(s *corev1.NodeStatus) { s.Conditions[1].LastTransitionTime = at(time.Hour) }},
		{name: "condition added", want: true, change: func(s *corev1.NodeStatus) {
			s.Conditions = append(s.Conditions, corev1.NodeCondition{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse})
		}},
		{name: "condition replaced by another type", want: true, change: func(s *corev1.NodeStatus) {
			s.Conditions[1].Type = corev1.NodeDiskPressure
		}},
		{name: "capacity", want: true, change: func(s *corev1.NodeStatus) { s.Capacity[corev1.ResourceCPU] = resource.MustParse("3") }},
		{name: "allocatable", want: true, change: func(s *corev1.NodeStatus) {
			s.Allocatable[corev1.ResourcePods] = resource.MustParse("10")
		}},
		{name: "node info", want: true, change: func(s *corev1.NodeStatus) { s.NodeInfo.KubeletVersion = "v1.38.0" }},
		{name: "addresses", want: true, change: func(s *corev1.NodeStatus) { s.Addresses[0].Address = "10.0.0.2" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev, next := readyStatus(), readyStatus()
			tc.change(&next)
			if got := statusChanged(&prev, &next); got != tc.want {
				t.Errorf("statusChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNextStatusReportsOnChangeOrReportFrequency(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name       string
		lastReport time.Time
		notReady   bool
		want       bool
	}{
		{name: "never reported", want: true},
		{name: "unchanged, reported 10s ago", lastReport: now.Add(-10 * time.Second)},
		{name: "unchanged, report frequency nearly over", lastReport: now.Add(-5*time.Minute + time.Second)},
		{name: "unchanged, report frequency over", lastReport: now.Add(-5 * time.Minute), want: true},
		{name: "changed, reported 10s ago", lastReport: now.Add(-10 * time.Second), notReady: true, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(fake.NewClientset(), clocktesting.NewFakeClock(now), Config{NodeName: testNode})
			if err != nil {
				t.Fatal(err)
			}
			node, err := r.initialNode(t0)
			if err != nil {
				t.Fatal(err)
			}
			r.lastReport = tc.lastReport
			r.Health().SetReady(!tc.notReady, "")

			next, report, err := r.nextStatus(node, now)
			if err != nil {
				t.Fatal(err)
			}
			if report != tc.want {
				t.Errorf("report = %v, want %v", report, tc.want)
			}
			for _, c := range next.Status.Conditions {
				if !c.LastHeartbeatTime.Time.Equal(now) {
					t.Errorf("%s lastHeartbeatTime = %v, want %v", c.Type, c.LastHeartbeatTime, now)
				}
			}
		})
	}
}

func TestStatusPatch(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *corev1.NodeStatus)
		// wantKeys are the keys of the patch's status.
		wantKeys []string
	}{
		{name: "heartbeat", wantKeys: []string{"$setElementOrder/conditions", "conditions"}, change: func(s *corev1.NodeStatus) {
			s.Conditions[0].LastHeartbeatTime = at(time.Hour)
		}},
		{name: "condition flips", wantKeys: []string{"$setElementOrder/conditions", "conditions"}, change: func(s *corev1.NodeStatus) {
			s.Conditions[0].Status, s.Conditions[0].LastTransitionTime = corev1.ConditionFalse, at(time.Hour)
		}},
		{name: "resource dropped", wantKeys: []string{"capacity"}, change: func(s *corev1.NodeStatus) {
			s.Capacity[corev1.ResourceMemory] = resource.MustParse("1Gi")
			delete(s.Capacity, corev1.ResourceCPU)
		}},
		{name: "address of the same type replaced", wantKeys: []string{"addresses"}, change: func(s *corev1.NodeStatus) {
			s.Addresses = []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
				{Type: corev1.NodeInternalIP, Address: "fd00::2"},
			}
		}},
		{name: "addresses dropped", wantKeys: []string{"addresses"}, change: func(s *corev1.NodeStatus) {
			s.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: testNode}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev, next := readyStatus(), readyStatus()
			tc.change(&next)
			patch, err := statusPatch(&prev, &next)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]map[string]json.RawMessage
			if err := json.Unmarshal(patch, &fields); err != nil {
				t.Fatalf("patch %s: %v", patch, err)
			}
			if len(fields) != 1 || fields["status"] == nil {
				t.Fatalf("patch %s touches more than the status", patch)
			}
			var keys []string
			for k := range fields["status"] {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("patch %s has status keys %v, want %v", patch, keys, tc.wantKeys)
			}

			// Applied to the stored node, the patch yields the next status.
			stored := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}, Status: prev}
			storedJSON, err := json.Marshal(stored)
			if err != nil {
				t.Fatal(err)
			}
			patchedJSON, err := strategicpatch.StrategicMergePatch(storedJSON, patch, corev1.Node{})
			if err != nil {
				t.Fatalf("apply %s: %v", patch, err)
			}
			var patched corev1.Node
			if err := json.Unmarshal(patchedJSON, &patched); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(patched.Status, next) {
				t.Errorf("patched status = %+v\nwant %+v", patched.Status, next)
			}
		})
	}
}

// TestStatusReportCadence follows one node's status reports. The harness
// draws 0 at random, the low end of the spread: a report of a change is
// followed by the next unchanged one half a report interval early, and a
// report made because the interval passed keeps the node's phase.
func TestStatusReportCadence(t *testing.T) {
	h := newHarness(t, Config{})
	h.start()
	h.settle(2)
	h.calls()

	// quietUntil steps the syncs up to, not including, the one at end, and
	// fails on any patch among them.
	elapsed := time.Duration(0)
	quietUntil := func(end time.Duration) {
		t.Helper()
		for elapsed+10*time.Second < end {
			h.step(10*time.Second, 2)
			elapsed += 10 * time.Second
			if n := count(h.calls(), "patch", "nodes"); n != 0 {
				t.Fatalf("%v: %d patches of an unchanged status, want none", elapsed, n)
			}
		}
	}
	reportAt := func(when time.Duration, why string) {
		t.Helper()
		h.step(10*time.Second, 2)
		elapsed += 10 * time.Second
		if elapsed != when {
			t.Fatalf("stepped to %v, want %v", elapsed, when)
		}
		if n := count(h.calls(), "patch", "nodes"); n != 1 {
			t.Fatalf("%v: %d patches, want 1 %s", when, n, why)
		}
		ready := condition(h.node(), corev1.NodeReady)
		if want := at(when); !ready.LastHeartbeatTime.Equal(&want) {
			t.Errorf("%v: Ready lastHeartbeatTime = %v, want %v", when, ready.LastHeartbeatTime, want)
		}
	}

	// Registered at t0, a change: the next report is due at 300s - 150s.
	quietUntil(150 * time.Second)
	reportAt(150*time.Second, "once the spread report interval passed")
	if ready := condition(h.node(), corev1.NodeReady); !ready.LastTransitionTime.Time.Equal(at(0).Time) || ready.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s since %v, want True since %v", ready.Status, ready.LastTransitionTime, at(0))
	}

	// That report was due, not a change: the phase holds, 300s later.
	quietUntil(450 * time.Second)
	reportAt(450*time.Second, "one whole report interval later")

	h.r.Health().SetReady(false, "container runtime is down")
	reportAt(460*time.Second, "for a change")
	ready := condition(h.node(), corev1.NodeReady)
	if want := at(460 * time.Second); ready.Status != corev1.ConditionFalse || !ready.LastTransitionTime.Equal(&want) ||
		ready.Message != "container runtime is down" {
		t.Errorf("Ready = %+v, want False %q since %v", ready, "container runtime is down", want)
	}
	memory := condition(h.node(), corev1.NodeMemoryPressure)
	if want := at(460 * time.Second); !memory.LastHeartbeatTime.Equal(&want) {
		t.Errorf("MemoryPressure lastHeartbeatTime = %v, want %v: every write refreshes every heartbeat", memory.LastHeartbeatTime, want)
	}
	if want := at(0); !memory.LastTransitionTime.Equal(&want) {
		t.Errorf("MemoryPressure lastTransitionTime = %v, want %v", memory.LastTransitionTime, want)
	}

	// A change draws a new spread: due again at 460s + 150s.
	quietUntil(610 * time.Second)
	reportAt(610*time.Second, "once the spread report interval passed again")
}

func TestReportSpreadIsUniformOverHalfAnInterval(t *testing.T) {
	r := &Reporter{random: seededRandom(7), cfg: Config{NodeStatusReportFrequency: 5 * time.Minute}}
	var below, above int
	for range 1000 {
		d := r.reportSpread()
		if d < -150*time.Second || d >= 150*time.Second {
			t.Fatalf("spread %v, want within [-2m30s, 2m30s)", d)
		}
		if d < 0 {
			below++
		} else {
			above++
		}
	}
	if below < 400 || above < 400 {
		t.Errorf("%d spreads below zero and %d above of 1000, want both near half", below, above)
	}
}

// nodeGets counts the Node GETs and the status patches.
func nodeGets(calls []call) (gets, patches int) {
	for _, c := range calls {
		switch {
		case c.verb == "get" && c.resource == "nodes":
			gets++
		case c.verb == "patch" && c.resource == "nodes" && c.subresource == "status":
			patches++
		}
	}
	return gets, patches
}

func TestAdoptedNodeIsReportedAtOnce(t *testing.T) {
	h := newHarness(t, Config{}, existingNode(), ownedLease())
	h.blindWatch()
	h.start()
	h.settle(2)

	if gets, patches := nodeGets(h.calls()); gets != 1 || patches != 1 {
		t.Fatalf("%d node GETs and %d patches, want 1 and 1", gets, patches)
	}
	ready := condition(h.node(), corev1.NodeReady)
	if want := at(0); ready.Status != corev1.ConditionTrue || ready.Reason != ReasonKubeletReady ||
		!ready.LastTransitionTime.Equal(&want) || !ready.LastHeartbeatTime.Equal(&want) {
		t.Errorf("Ready = %+v, want True since %v", ready, want)
	}
	if got := len(h.node().Status.Conditions); got != 4 {
		t.Errorf("%d conditions, want 4", got)
	}
}

// TestStatusSyncsReadTheWatchedNode runs a reporter whose watch shows it its
// Node: its syncs must read no Node themselves, and yet see what another
// writer changed, as the node lifecycle controller marks an unreachable
// node's Ready Unknown: the next sync reports the node Ready again, and so
// does the resume of a reporter marked while paused, at once.
func TestStatusSyncsReadTheWatchedNode(t *testing.T) {
	h := newHarness(t, Config{})
	h.start()
	h.settle(2)
	h.watched(func(*corev1.Node) bool { return true })
	h.calls()
	for range 6 {
		h.step(10*time.Second, 2)
	}
	if gets, patches := nodeGets(h.calls()); gets != 0 || patches != 0 {
		t.Fatalf("a minute of unchanged status: %d node GETs and %d patches, want none", gets, patches)
	}

	markUnknown := func() {
		t.Helper()
		node := h.node().DeepCopy()
		for i := range node.Status.Conditions {
			node.Status.Conditions[i].Status = corev1.ConditionUnknown
			node.Status.Conditions[i].Reason = "NodeStatusUnknown"
		}
		if err := h.cs.Tracker().Update(nodesGVR, node, ""); err != nil {
			t.Fatal(err)
		}
		h.watched(func(n *corev1.Node) bool { return condition(n, corev1.NodeReady).Status == corev1.ConditionUnknown })
		h.calls()
	}
	wantReported := func(when string, wantGets, wantPatches int) {
		t.Helper()
		if gets, patches := nodeGets(h.calls()); gets != wantGets || patches != wantPatches {
			t.Errorf("%s: %d node GETs and %d patches, want %d and %d", when, gets, patches, wantGets, wantPatches)
		}
		now := metav1.NewTime(h.clk.Now())
		if ready := condition(h.node(), corev1.NodeReady); ready.Status != corev1.ConditionTrue || !ready.LastHeartbeatTime.Equal(&now) {
			t.Errorf("%s: Ready = %+v, want True at %v", when, ready, now)
		}
	}

	markUnknown()
	h.step(10*time.Second, 2)
	wantReported("next sync after the mark", 0, 1)

	// A failed patch is tried again on the Node read from etcd.
	markUnknown()
	h.failN("patch", "nodes", 1, errors.New("connection reset by peer"))
	h.step(10*time.Second, 2)
	wantReported("next sync after a mark, its first patch failing", 1, 2)

	h.r.Pause()
	h.settle(0)
	markUnknown()
	h.r.Resume()
	h.settle(2)
	wantReported("resume after a mark while paused", 0, 1)
}

func TestStatusRetries(t *testing.T) {
	lost := errors.New("connection reset by peer")
	tests := []struct {
		name        string
		getFails    int
		patchFails  int
		wantGets    int
		wantPatches int
		wantHook    int32
	}{
		{name: "read while the watch has no Node", wantGets: 1, wantPatches: 1},
		{name: "failed read is retried", getFails: 1, wantGets: 2, wantPatches: 1},
		{name: "second failure calls the hook", getFails: 2, wantGets: 3, wantPatches: 1, wantHook: 1},
		{name: "failed patch is retried", patchFails: 1, wantGets: 2, wantPatches: 2},
		{name: "gives up after 5 tries", getFails: 5, wantGets: 5, wantHook: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{}, existingNode(), ownedLease())
			h.blindWatch()
			h.failN("get", "nodes", tc.getFails, lost)
			h.failN("patch", "nodes", tc.patchFails, lost)
			h.start()
			h.settle(2)

			if gets, patches := nodeGets(h.calls()); gets != tc.wantGets || patches != tc.wantPatches {
				t.Errorf("%d node GETs and %d patches, want %d and %d", gets, patches, tc.wantGets, tc.wantPatches)
			}
			if n := h.failures.Load(); n != tc.wantHook {
				t.Errorf("OnRepeatedFailure called %d times, want %d", n, tc.wantHook)
			}
		})
	}
}

// TestDeletedNodeStaysDeleted deletes the Node after the reporter registered
// it, and its Lease with it as the garbage collector would: like a kubelet,
// the reporter must not register the Node again, through its status syncs,
// its lease renewals or a pause and resume, but report the Node missing.
func TestDeletedNodeStaysDeleted(t *testing.T) {
	h := newHarness(t, Config{})
	h.start()
	h.settle(2)
	h.calls()
	if err := h.cs.Tracker().Delete(nodesGVR, "", testNode); err != nil {
		t.Fatal(err)
	}
	if err := h.cs.Tracker().Delete(leasesGVR, corev1.NamespaceNodeLease, testNode); err != nil {
		t.Fatal(err)
	}

	var got []call
	for range 6 {
		h.step(10*time.Second, 2)
		got = append(got, h.calls()...)
	}
	h.r.Pause()
	h.settle(0)
	h.r.Resume()
	h.settle(2)
	got = append(got, h.calls()...)

	if n := count(got, "create", "nodes"); n != 0 {
		t.Errorf("%d node creates after the node was deleted, want none", n)
	}
	if _, patches := nodeGets(got); patches != 0 {
		t.Errorf("%d status patches of the deleted node, want none", patches)
	}
	if _, err := h.cs.Tracker().Get(nodesGVR, "", testNode); !apierrors.IsNotFound(err) {
		t.Errorf("get deleted node: %v, want NotFound", err)
	}
	if n := h.logged("Failed to report node status", "not found"); n == 0 {
		t.Errorf("no failed status report logged as not found")
	}
	if n := h.failures.Load(); n != 0 {
		t.Errorf("OnRepeatedFailure called %d times for a deleted node, want 0", n)
	}
}

func TestFailingSetterDoesNotStopTheOthers(t *testing.T) {
	broken := func(*corev1.Node, time.Time) error { return errors.New("no disk stats") }
	h := newHarness(t, Config{Setters: append([]StatusSetter{broken}, DefaultSetters(nil)...)})
	h.start()
	h.settle(2)
	if ready := condition(h.node(), corev1.NodeReady); ready.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %q, want True", ready.Status)
	}
	if !strings.HasPrefix(h.node().Status.NodeInfo.KubeletVersion, "v1.") {
		t.Errorf("node info not set: %+v", h.node().Status.NodeInfo)
	}
}
