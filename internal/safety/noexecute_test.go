package safety

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// nodeWith returns a node carrying the given taints and countdown record.
func nodeWith(c *Countdown, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	n.Spec.Taints = taints
	if c != nil {
		n.Annotations = map[string]string{AnnotationCountdown: encode(c)}
	}
	return n
}

func noExecute(key string, added time.Time) corev1.Taint {
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}
}

func TestACountdownPausesAndGoesOnWhereItStopped(t *testing.T) {
	other := corev1.Taint{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}
	tainted := nodeWith(nil, other, noExecute(corev1.TaintNodeUnreachable, t0))

	// Held 40s after the taint: it comes off, with 40s served.
	paused := pauseNoExecute(tainted, t0.Add(40*time.Second))
	if paused == nil || !paused.Removed || len(paused.Taints) != 1 || paused.Taints[0] != other {
		t.Fatalf("pause = %+v, want the lifecycle taint off and the other kept", paused)
	}
	want := Countdown{Started: t0, ServedSeconds: 40}
	if paused.Countdown == nil || *paused.Countdown != want {
		t.Fatalf("countdown kept = %+v, want %+v", paused.Countdown, want)
	}

	// Released ten minutes later: back, dated 40s before the release.
	held := paused.Apply(tainted)
	release := t0.Add(10 * time.Minute)
	resumed := setNoExecute(held, corev1.TaintNodeUnreachable, release)
	if resumed == nil || resumed.Added != corev1.TaintNodeUnreachable {
		t.Fatalf("release = %+v, want the taint added", resumed)
	}
	back := resumed.Apply(held)
	got := lifecycleNoExecute(back)
	if got == nil || !got.TimeAdded.Time.Equal(release.Add(-40*time.Second)) {
		t.Fatalf("taint after the hold = %+v, want timeAdded 40s before the release", got)
	}
	if c, ok := CountdownOf(back); !ok || !c.Started.Equal(t0) || !c.Resumed.Equal(release) {
		t.Fatalf("countdown after the hold = %+v, %v; want started at the first taint, resumed at the release", c, ok)
	}

	// Held again 20s later, and the served time adds up: 60s.
	again := pauseNoExecute(back, release.Add(20*time.Second))
	if again.Countdown.ServedSeconds != 60 || !again.Countdown.Started.Equal(t0) {
		t.Fatalf("second pause kept %+v, want 60s served since the first taint", again.Countdown)
	}

	// Ready again: the taint and the record go.
	ready := setNoExecute(again.Apply(back), "", release.Add(time.Hour))
	if ready == nil || ready.Countdown != nil || len(ready.Taints) != 1 {
		t.Fatalf("episode end = %+v, want no record and only the other taint", ready)
	}
}

func TestSetNoExecute(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		node *corev1.Node
		key  string
		// want is the lifecycle NoExecute taint after, "" for none;
		// wantAdded its timeAdded; nilWrite that nothing changes.
		want      string
		wantAdded time.Time
		nilWrite  bool
	}{
		{name: "added now", node: nodeWith(nil), key: corev1.TaintNodeUnreachable,
			want: corev1.TaintNodeUnreachable, wantAdded: now},
		{name: "kept as it is", node: nodeWith(nil, noExecute(corev1.TaintNodeUnreachable, t0)),
			key: corev1.TaintNodeUnreachable, nilWrite: true},
		{name: "swapped, keeping the first time", node: nodeWith(nil, noExecute(corev1.TaintNodeNotReady, t0)),
			key: corev1.TaintNodeUnreachable, want: corev1.TaintNodeUnreachable, wantAdded: t0},
		{name: "back after a pause, dated by the time served",
			node: nodeWith(&Countdown{Started: t0, ServedSeconds: 90}), key: corev1.TaintNodeNotReady,
			want: corev1.TaintNodeNotReady, wantAdded: now.Add(-90 * time.Second)},
		{name: "never dated before the countdown began",
			node: nodeWith(&Countdown{Started: now.Add(-time.Second), ServedSeconds: 90}), key: corev1.TaintNodeNotReady,
			want: corev1.TaintNodeNotReady, wantAdded: now.Add(-time.Second)},
		{name: "a record that does not parse is none", node: func() *corev1.Node {
			n := nodeWith(nil)
			n.Annotations = map[string]string{AnnotationCountdown: "served a while"}
			return n
		}(), key: corev1.TaintNodeUnreachable, want: corev1.TaintNodeUnreachable, wantAdded: now},
		{name: "removed", node: nodeWith(nil, noExecute(corev1.TaintNodeUnreachable, t0)), key: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := setNoExecute(tc.node, tc.key, now)
			if tc.nilWrite {
				if w != nil {
					t.Fatalf("write = %+v, want none", w)
				}
				return
			}
			if w == nil {
				t.Fatal("no write")
			}
			got := lifecycleNoExecute(w.Apply(tc.node))
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("taint %+v left, want none", got)
			case tc.want != "" && (got == nil || got.Key != tc.want || !got.TimeAdded.Time.Equal(tc.wantAdded)):
				t.Fatalf("taint = %+v, want %s added at %v", got, tc.want, tc.wantAdded)
			}
		})
	}
}
