package patch

import (
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestForUIDNamesTheObjectsUID(t *testing.T) {
	pod := &corev1.Pod{}
	pod.UID = "u-1"
	base := pod.DeepCopy()
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	for _, p := range []client.Patch{client.StrategicMergeFrom(base), client.MergeFrom(base)} {
		data, err := ForUID(p).Data(pod)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
			Status map[string]any `json:"status"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Metadata.UID != "u-1" || doc.Status["conditions"] == nil {
			t.Errorf("%s patch %s: want the UID and the change", p.Type(), data)
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
