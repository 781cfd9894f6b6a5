// Package patch writes patches that land only on the object they were
// computed from.
//
// A patch is sent by name. Computed from a cached object, it lands on
// whatever object holds that name when it arrives: a pod deleted and made
// again under the same name (a StatefulSet's pods are) would take a
// NotReady mark or a DisruptionTarget condition meant for its predecessor.
// A patch that names the object's UID is refused by the apiserver when the
// UID differs, since a UID cannot change.
package patch

import (
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ForUID returns p, made to apply only to an object with obj's UID when
// Data is called with obj. p must be a JSON merge or strategic merge patch.
func ForUID(p client.Patch) client.Patch { return uidPatch{p} }

type uidPatch struct{ client.Patch }

// Data returns the patch with the object's UID in its metadata.
func (p uidPatch) Data(obj client.Object) ([]byte, error) {
	data, err := p.Patch.Data(obj)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read %s patch: %w", p.Type(), err)
	}
	meta, _ := doc["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		doc["metadata"] = meta
	}
	meta["uid"] = string(obj.GetUID())
	return json.Marshal(doc)
}

// Replaced reports whether err is the apiserver's refusal of a ForUID patch
// because the name now belongs to another object, or to none.
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
