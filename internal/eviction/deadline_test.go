package eviction

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

const timeout = 5 * time.Minute

func taint(key string, effect corev1.TaintEffect, added *time.Time) corev1.Taint {
	t := corev1.Taint{Key: key, Effect: effect}
	if added != nil {
		t.TimeAdded = &metav1.Time{Time: *added}
	}
	return t
}

func tol(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func TestDeadline(t *testing.T) {
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	unreachable := taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, &t0)
	notReady := taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, at(time.Minute))
	custom := taint("example.com/maintenance", corev1.TaintEffectNoExecute, at(2*time.Minute))

	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		taints      []corev1.Taint
		want        Decision
	}{
		{"no taints", nil, nil, Decision{}},
		{"only NoSchedule taints", nil, []corev1.Taint{taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule, &t0)}, Decision{}},
		{"no toleration: the pod eviction timeout", nil, []corev1.Taint{unreachable},
			Decision{Evict: true, At: t0.Add(timeout), Cause: CauseDefaultTimeout, Taint: corev1.TaintNodeUnreachable}},
		{"toleration seconds", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](30))}, []corev1.Taint{unreachable},
			Decision{Evict: true, At: t0.Add(30 * time.Second), Cause: CauseToleration, Taint: corev1.TaintNodeUnreachable}},
		{"tolerated forever", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, []corev1.Taint{unreachable},
			Decision{Cause: CauseTolerated, Taint: corev1.TaintNodeUnreachable}},
		{"an empty key with Exists tolerates everything forever", []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			[]corev1.Taint{unreachable, custom}, Decision{Cause: CauseTolerated, Taint: corev1.TaintNodeUnreachable}},
		{"several matching tolerations: the smallest seconds wins", []corev1.Toleration{
			tol(corev1.TaintNodeUnreachable, nil),
			tol(corev1.TaintNodeUnreachable, ptr.To[int64](600)),
			tol("", ptr.To[int64](120)),
		}, []corev1.Taint{unreachable},
			Decision{Evict: true, At: t0.Add(2 * time.Minute), Cause: CauseToleration, Taint: corev1.TaintNodeUnreachable}},
		{"negative seconds mean now", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](-5))}, []corev1.Taint{unreachable},
			Decision{Evict: true, At: t0, Cause: CauseToleration, Taint: corev1.TaintNodeUnreachable}},
		{"absurd seconds do not overflow", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](math.MaxInt64))}, []corev1.Taint{unreachable},
			Decision{Evict: true, At: t0.Add(time.Duration(math.MaxInt64 / int64(time.Second) * int64(time.Second))), Cause: CauseToleration, Taint: corev1.TaintNodeUnreachable}},
		{"another NoExecute taint not tolerated: now", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, []corev1.Taint{unreachable, custom},
			Decision{Evict: true, At: t0.Add(2 * time.Minute), Cause: CauseNotTolerated, Taint: "example.com/maintenance"}},
		{"the earliest taint decides", []corev1.Toleration{tol(corev1.TaintNodeNotReady, ptr.To[int64](10))}, []corev1.Taint{unreachable, notReady},
			Decision{Evict: true, At: t0.Add(time.Minute + 10*time.Second), Cause: CauseToleration, Taint: corev1.TaintNodeNotReady}},
		{"a toleration for another key does not match", []corev1.Toleration{tol(corev1.TaintNodeNotReady, nil)}, []corev1.Taint{unreachable},
			Decision{Evict: true, At: t0.Add(timeout), Cause: CauseDefaultTimeout, Taint: corev1.TaintNodeUnreachable}},
		{"a NoSchedule toleration does not match a NoExecute taint", []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			[]corev1.Taint{unreachable}, Decision{Evict: true, At: t0.Add(timeout), Cause: CauseDefaultTimeout, Taint: corev1.TaintNodeUnreachable}},
		{"a taint without timeAdded counts from the fallback", nil, []corev1.Taint{taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, nil)},
			Decision{Evict: true, At: t0.Add(time.Hour + timeout), Cause: CauseDefaultTimeout, Taint: corev1.TaintNodeNotReady}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tt.tolerations}}
			got := Deadline(pod, tt.taints, timeout, t0.Add(time.Hour))
			if got.Evict != tt.want.Evict || !got.At.Equal(tt.want.At) || got.Cause != tt.want.Cause || got.Taint != tt.want.Taint {
				t.Errorf("got %+v (%s), want %+v (%s)", got, got.Cause, tt.want, tt.want.Cause)
			}
		})
	}
}
