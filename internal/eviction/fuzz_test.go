package eviction

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzDeadline checks the deadline's invariants for any toleration and
// taint: it never panics; no NoExecute taint means no eviction; a deadline
// is never before the taint was added; and it never exceeds what the
// taint's own rule allows (the timeout for a lifecycle taint nobody
// tolerates, the smallest tolerationSeconds otherwise).
func FuzzDeadline(f *testing.F) {
	f.Add(corev1.TaintNodeUnreachable, "NoExecute", true, corev1.TaintNodeUnreachable, "Exists", "", "NoExecute", true, int64(300), int64(300))
	f.Add(corev1.TaintNodeNotReady, "NoExecute", true, "", "Exists", "", "", false, int64(0), int64(300))
	f.Add("example.com/custom", "NoExecute", false, "example.com/custom", "Equal", "v", "NoExecute", true, int64(-5), int64(300))
	f.Add(corev1.TaintNodeUnreachable, "NoSchedule", true, "", "", "", "", false, int64(0), int64(300))
	f.Add(corev1.TaintNodeUnreachable, "NoExecute", true, corev1.TaintNodeUnreachable, "Exists", "", "NoExecute", true, int64(1<<62), int64(300))
	f.Fuzz(func(t *testing.T, taintKey, effect string, timed bool, tolKey, tolOp, tolValue, tolEffect string, hasSeconds bool, seconds, timeoutSeconds int64) {
		added := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		now := added.Add(time.Minute)
		taint := corev1.Taint{Key: taintKey, Effect: corev1.TaintEffect(effect)}
		if timed {
			taint.TimeAdded = &metav1.Time{Time: added}
		}
		tol := corev1.Toleration{Key: tolKey, Operator: corev1.TolerationOperator(tolOp), Value: tolValue,
			Effect: corev1.TaintEffect(tolEffect)}
		if hasSeconds {
			tol.TolerationSeconds = &seconds
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{tol}}}
		timeout := time.Duration(timeoutSeconds%1e6) * time.Second

		d := Deadline(pod, []corev1.Taint{taint}, timeout, now)

		from := now
		if timed {
			from = added
		}
		if taint.Effect != corev1.TaintEffectNoExecute {
			if d.Evict {
				t.Fatalf("evicts for a %q taint: %+v", effect, d)
			}
			return
		}
		if !d.Evict {
			if d.Cause != CauseTolerated {
				t.Fatalf("no eviction for an untolerated NoExecute taint: %+v", d)
			}
			return
		}
		if d.At.Before(from) && d.Cause != CauseDefaultTimeout {
			t.Fatalf("deadline %v before the taint was added at %v: %+v", d.At, from, d)
		}
		switch d.Cause {
		case CauseDefaultTimeout:
			if !IsLifecycleTaint(taintKey) || !d.At.Equal(from.Add(timeout)) {
				t.Fatalf("default timeout for %q: %+v", taintKey, d)
			}
		case CauseNotTolerated:
			if IsLifecycleTaint(taintKey) || !d.At.Equal(from) {
				t.Fatalf("not tolerated %q: %+v", taintKey, d)
			}
		case CauseToleration:
			if !hasSeconds || d.At.After(from.Add(time.Duration(min(max(seconds, 0), maxTolerationSeconds))*time.Second)) {
				t.Fatalf("toleration deadline beyond its seconds: %+v", d)
			}
		default:
			t.Fatalf("eviction with cause %v", d.Cause)
		}
	})
}
