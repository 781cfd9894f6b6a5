package patch

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestPodConditionSetsOneConditionOfThatPod(t *testing.T) {
	at := metav1.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{}
	pod.UID = "u-1"
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "kept", LastProbeTime: at},
		{Type: "example.com/Theirs", Status: corev1.ConditionTrue},
	}
	order := `"$setElementOrder/conditions":[{"type":"PodScheduled"},{"type":"Ready"},{"type":"example.com/Theirs"}`
	for _, tc := range []struct {
		name string
		set  corev1.PodCondition
		want string
	}{
		{"Ready False, its reason and probe time kept",
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at},
			`{"metadata":{"uid":"u-1"},"status":{` + order + `],` +
				`"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-11-29T10:00:00Z"}]}}`},
		{"a new condition in full, last",
			corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "R", Message: "M", LastTransitionTime: at},
			`{"metadata":{"uid":"u-1"},"status":{` + order + `,{"type":"DisruptionTarget"}],` +
				`"conditions":[{"type":"DisruptionTarget","status":"True","reason":"R","message":"M","lastTransitionTime":"2026-11-29T10:00:00Z"}]}}`},
	} {
		// The pod as the callers send it: the condition set.
		sent := pod.DeepCopy()
		merged := false
		for i := range sent.Status.Conditions {
			if c := &sent.Status.Conditions[i]; c.Type == tc.set.Type {
				c.Status, c.LastTransitionTime, merged = tc.set.Status, tc.set.LastTransitionTime, true
			}
		}
		if !merged {
			sent.Status.Conditions = append(sent.Status.Conditions, tc.set)
		}
		p := PodCondition(tc.set)
		data, err := p.Data(sent)
		if err != nil {
			t.Fatal(err)
		}
		if p.Type() != types.StrategicMergePatchType || string(data) != tc.want {
			t.Errorf("%s: %s patch\n%s, want a strategic merge\n%s", tc.name, p.Type(), data, tc.want)
		}
		// Applied as the apiserver applies it, it makes the pod as sent.
		before, _ := json.Marshal(pod)
		after, err := strategicpatch.StrategicMergePatch(before, data, &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.Pod
		if err := json.Unmarshal(after, &got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Status.Conditions, sent.Status.Conditions) {
			t.Errorf("%s: applied, conditions\n%+v, want\n%+v", tc.name, got.Status.Conditions, sent.Status.Conditions)
		}
	}
}

func TestReplaced(t *testing.T) {
	gk := schema.GroupKind{Kind: "Pod"}
	uid := apierrors.NewInvalid(gk, "p", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "x", "field is immutable")})
	other := apierrors.NewInvalid(gk, "p", field.ErrorList{field.Invalid(field.NewPath("status", "phase"), "x", "bad")})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the UID refused", uid, true},
		{"wrapped", errors.Join(errors.New("patch"), uid), true},
		{"gone", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), true},
		{"another field refused", other, false},
		{"a conflict", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("x")), false},
	} {
		if got := Replaced(tc.err); got != tc.want {
			t.Errorf("%s: Replaced = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// BenchmarkPodCondition marks a pod NotReady, the patch written out against
// the same patch computed from a copy, on a pod with the fields the
// apiserver and the kubelet fill in.
func BenchmarkPodCondition(b *testing.B) {
	at := metav1.Now()
	secs := int64(300)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "0b0f1e8a-7c2d-4a5e-9f3b-1d2c3e4f5a6b",
			Labels: map[string]string{"app": "web"}, CreationTimestamp: at},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "default", TerminationGracePeriodSeconds: &secs,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}},
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &secs}}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &at, PodIP: "10.0.0.1", HostIP: "10.1.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.k8s.io/pause:3.10", ContainerID: "containerd://1",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}}},
	}
	notReady := func(p *corev1.Pod) corev1.PodCondition {
		c := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}
		p.Status.Conditions[1].Status, p.Status.Conditions[1].LastTransitionTime = c.Status, c.LastTransitionTime
		return c
	}
	b.Run("written", func(b *testing.B) {
		for b.Loop() {
			p := pod.DeepCopy()
			if _, err := PodCondition(notReady(p)).Data(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("computed", func(b *testing.B) {
		for b.Loop() {
			base, p := pod.DeepCopy(), pod.DeepCopy()
			notReady(p)
			if _, err := client.StrategicMergeFrom(base).Data(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
