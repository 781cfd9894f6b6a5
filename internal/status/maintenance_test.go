package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// maintenanceInput is a cluster of three nodes, zones a and b, in which
// "maint" went silent at 10:30 after its MaintenanceInProgress condition
// turned True at 10:00 (since, when not zero); the report is asked at 12:00.
func maintenanceInput(grace time.Duration, since time.Time, taints ...corev1.Taint) Input {
	maint := testNode("maint", "a", corev1.ConditionUnknown, taints...)
	maint.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-90 * time.Minute))
	maint.Status.Conditions = append(maint.Status.Conditions, corev1.NodeCondition{
		Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since),
	})
	s := defaults
	s.MaintenanceGrace = grace
	return Input{
		Now:      t0,
		Nodes:    []corev1.Node{testNode("ok", "a", corev1.ConditionTrue), maint, testNode("ok2", "b", corev1.ConditionTrue)},
		Pods:     []corev1.Pod{testPod("plain", "maint")},
		Policies: policy.NewSet(s, nil),
	}
}

func TestReportSaysWhatMaintenanceHolds(t *testing.T) {
	ten := t0.Add(-2 * time.Hour)
	tainted := metav1.NewTime(t0.Add(-time.Hour))
	noExecute := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &tainted}
	for _, tc := range []struct {
		name string
		in   Input
		// notReady is what zone /a counts not Ready beside its one Ready
		// node.
		notReady int
		held     string
		// maint is the node's maintenance; nil when it has none.
		maint   *Maintenance
		lines   []string
		absent  []string
		jsonHas []string
	}{{
		// The grace counts from 10:30, when the node went silent, which
		// is later than its maintenance began.
		name:  "within its grace",
		in:    maintenanceInput(2*time.Hour, ten),
		held:  "node in maintenance (MaintenanceInProgress), until 12:30:00Z",
		maint: &Maintenance{Condition: "MaintenanceInProgress", Since: ptrTo(ten), HeldUntil: ptrTo(t0.Add(30 * time.Minute)), Held: true},
		lines: []string{
			"  Held:       node in maintenance (MaintenanceInProgress), until 12:30:00Z\n",
			"  Maintenance: MaintenanceInProgress since 10:00:00Z, eviction held until 12:30:00Z\n",
			"    default    plain  not tainted NoExecute yet  NoNoExecuteTaint\n",
		},
		jsonHas: []string{`"maintenance": {`, `"condition": "MaintenanceInProgress"`, `"heldUntil": "2026-11-23T12:30:00Z"`, `"held": true`},
	}, {
		name:     "grace ran out",
		in:       maintenanceInput(30*time.Minute, ten, noExecute),
		notReady: 1,
		maint:    &Maintenance{Condition: "MaintenanceInProgress", Since: ptrTo(ten), HeldUntil: ptrTo(t0.Add(-time.Hour))},
		lines: []string{
			"  Maintenance: MaintenanceInProgress since 10:00:00Z, hold ended at 11:00:00Z\n",
			"plain  due now (11:05:00Z)  PodEvictionTimeout (node.kubernetes.io/unreachable)\n",
		},
		absent:  []string{"Held:", "held: "},
		jsonHas: []string{`"maintenance": {`, `"held": false`},
	}, {
		name:     "maintenance off",
		in:       maintenanceInput(0, ten),
		notReady: 1,
		absent:   []string{"Maintenance:", "Held:"},
	}, {
		// Nothing says when the maintenance began: the grace counts from
		// the node going silent.
		name:  "no transition time",
		in:    maintenanceInput(2*time.Hour, time.Time{}),
		held:  "node in maintenance (MaintenanceInProgress), until 12:30:00Z",
		maint: &Maintenance{Condition: "MaintenanceInProgress", HeldUntil: ptrTo(t0.Add(30 * time.Minute)), Held: true},
		lines: []string{
			"  Maintenance: MaintenanceInProgress, eviction held until 12:30:00Z\n",
		},
		absent: []string{"since 10:00:00Z"},
	}, {
		name: "partition freeze comes first",
		in: func() Input {
			in := maintenanceInput(2*time.Hour, ten)
			in.FrozenSince = t0.Add(-time.Minute)
			return in
		}(),
		held:  HeldFreeze,
		maint: &Maintenance{Condition: "MaintenanceInProgress", Since: ptrTo(ten), HeldUntil: ptrTo(t0.Add(30 * time.Minute)), Held: true},
		lines: []string{
			"  Held:       partition freeze\n",
			"  Maintenance: MaintenanceInProgress since 10:00:00Z, eviction held until 12:30:00Z\n",
		},
	}, {
		// The grace the controller recorded on the node ends the hold,
		// as it does for a new leader.
		name: "grace recorded",
		in: func() Input {
			in := maintenanceInput(2*time.Hour, ten)
			in.Nodes[1].Annotations = map[string]string{safety.AnnotationMaintenanceGrace: `{"since":"2026-11-23T10:00:00Z","until":"2026-11-23T11:30:00Z"}`}
			return in
		}(),
		notReady: 1,
		maint:    &Maintenance{Condition: "MaintenanceInProgress", Since: ptrTo(ten), HeldUntil: ptrTo(t0.Add(-30 * time.Minute))},
		lines: []string{
			"  Maintenance: MaintenanceInProgress since 10:00:00Z, hold ended at 11:30:00Z\n",
		},
		absent: []string{"Held:"},
	}, {
		// A Ready node in maintenance counts as Ready in its zone, as the
		// controller counts it: only a node the maintenance holds down
		// leaves the counts.
		name: "ready node in maintenance",
		in: func() Input {
			in := maintenanceInput(2*time.Hour, ten)
			in.Nodes[0].Status.Conditions = append(in.Nodes[0].Status.Conditions, corev1.NodeCondition{
				Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ten)})
			return in
		}(),
		held:  "node in maintenance (MaintenanceInProgress), until 12:30:00Z",
		maint: &Maintenance{Condition: "MaintenanceInProgress", Since: ptrTo(ten), HeldUntil: ptrTo(t0.Add(30 * time.Minute)), Held: true},
	}, {
		// The flags turn maintenance off; the node's policy turns it on.
		name: "policy's grace",
		in: func() Input {
			in := maintenanceInput(0, ten)
			p := v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pool"},
				Spec: v1alpha1.NodeHealthPolicySpec{MaintenanceGracePeriod: &metav1.Duration{Duration: 2 * time.Hour}}}
			in.PolicyObjects = []v1alpha1.NodeHealthPolicy{p}
			in.Policies = policy.NewSet(defaults, in.PolicyObjects)
			return in
		}(),
		held:  "node in maintenance (MaintenanceInProgress), until 12:30:00Z",
		maint: &Maintenance{Condition: "MaintenanceInProgress", Since: ptrTo(ten), HeldUntil: ptrTo(t0.Add(30 * time.Minute)), Held: true},
		lines: []string{
			"Node maint (zone /a, NodeHealthPolicy pool)\n",
			"  Maintenance: MaintenanceInProgress since 10:00:00Z, eviction held until 12:30:00Z\n",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.in)
			if len(r.Zones) != 2 || r.Zones[0].Name != "/a" || r.Zones[0].Ready != 1 || r.Zones[0].NotReady != tc.notReady ||
				r.Zones[0].State != "Normal" || r.AllZonesDown {
				t.Fatalf("zones: %+v, want /a with 1 ready and %d not ready", r.Zones, tc.notReady)
			}
			if len(r.Unhealthy) != 1 {
				t.Fatalf("unhealthy: %+v", r.Unhealthy)
			}
			n := r.Unhealthy[0]
			if n.Name != "maint" || n.Held != tc.held {
				t.Errorf("node %s held %q, want %q", n.Name, n.Held, tc.held)
			}
			if !sameMaintenance(n.Maintenance, tc.maint) {
				t.Errorf("maintenance %s, want %s", maintenanceString(n.Maintenance), maintenanceString(tc.maint))
			}

			var text bytes.Buffer
			if err := WriteText(&text, r); err != nil {
				t.Fatal(err)
			}
			for _, line := range tc.lines {
				if !strings.Contains(text.String(), line) {
					t.Errorf("text output lacks %q:\n%s", line, text.String())
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(text.String(), s) {
					t.Errorf("text output has %q:\n%s", s, text.String())
				}
			}
			var js bytes.Buffer
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			if tc.maint == nil && strings.Contains(js.String(), `"maintenance"`) {
				t.Errorf("json has a maintenance block:\n%s", js.String())
			}
			for _, s := range tc.jsonHas {
				if !strings.Contains(js.String(), s) {
					t.Errorf("json lacks %s:\n%s", s, js.String())
				}
			}
		})
	}
}

func sameMaintenance(a, b *Maintenance) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Condition == b.Condition && a.Held == b.Held && sameTime(a.Since, b.Since) && sameTime(a.HeldUntil, b.HeldUntil)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func maintenanceString(m *Maintenance) string {
	if m == nil {
		return "none"
	}
	s := m.Condition
	if m.Since != nil {
		s += " since " + clock(*m.Since)
	}
	if m.HeldUntil != nil {
		s += " until " + clock(*m.HeldUntil)
	}
	if m.Held {
		s += " (held)"
	}
	return s
}
