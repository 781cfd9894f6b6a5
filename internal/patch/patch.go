// Package patch writes the pods' status patches, which land only on the pod
// they were meant for.
//
// A patch is sent by name. Meant for a cached object, it lands on
// whatever object holds that name when it arrives: a pod deleted and made
// again under the same name (a StatefulSet's pods are) would take a
// NotReady mark or a DisruptionTarget condition meant for its predecessor.
// A patch that names the object's UID is refused by the apiserver when the
// UID differs, since a UID cannot change.
package patch

import (
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodCondition returns a strategic merge patch of a pod's status that sets
// condition c, as c has it but for its probe time, and keeps the others (a
// pod's conditions merge by type), for the pod with the UID of the object
// it is sent for. That object is the pod as it is to be, c set: the patch
// keeps the order of its conditions, so that a new one comes last. It is
// written out rather than computed from a copy of the pod, which costs 25
// times the CPU and 30 times the allocations (BenchmarkPodCondition), paid
// for each of a dead zone's thousands of pods at once.
func PodCondition(c corev1.PodCondition) client.Patch { return conditionPatch{c} }

type conditionPatch struct{ c corev1.PodCondition }

// Type is a strategic merge.
func (conditionPatch) Type() types.PatchType { return types.StrategicMergePatchType }

// Data returns the patch for obj.
func (p conditionPatch) Data(obj client.Object) ([]byte, error) {
	type kind struct {
		Type corev1.PodConditionType `json:"type"`
	}
	type condition struct {
		Type               corev1.PodConditionType `json:"type"`
		Status             corev1.ConditionStatus  `json:"status"`
		Reason             string                  `json:"reason,omitempty"`
		Message            string                  `json:"message,omitempty"`
		LastTransitionTime metav1.Time             `json:"lastTransitionTime,omitzero"`
	}
	var doc struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
		Status struct {
			Order      []kind      `json:"$setElementOrder/conditions,omitempty"`
			Conditions []condition `json:"conditions"`
		} `json:"status"`
	}
	doc.Metadata.UID = obj.GetUID()
	if pod, ok := obj.(*corev1.Pod); ok {
		for _, c := range pod.Status.Conditions {
			doc.Status.Order = append(doc.Status.Order, kind{c.Type})
		}
	}
	doc.Status.Conditions = []condition{{p.c.Type, p.c.Status, p.c.Reason, p.c.Message, p.c.LastTransitionTime}}
	return json.Marshal(doc)
}

// Replaced reports whether err is the apiserver's refusal of a PodCondition
// patch because the name now belongs to another pod, or to none.
func Replaced(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldValueInvalid && c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}
