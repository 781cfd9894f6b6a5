// Package owners tells who last wrote a node's lifecycle state: its Ready
// condition and its taints, as the apiserver's managed fields record them.
// A controller that replaces kube-controller-manager's node lifecycle loops
// uses it to notice when those loops were left on and write beside it.
package owners

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// What names a part of a node's lifecycle state.
type What string

const (
	// Mark is the Ready condition set Unknown: only a node lifecycle
	// controller writes that, never the kubelet.
	Mark What = "mark"
	// Taints is the list of taints while it holds a node lifecycle taint.
	// The list is written whole (listType=atomic), so its writer is whoever
	// last changed any taint of it.
	Taints What = "taints"
)

// Entry is one managed fields entry, trimmed to who wrote, when, and which
// of the node's lifecycle state it holds.
type Entry struct {
	Manager string
	Time    metav1.Time
	Holds   []What
}

// kubelet is the kubelet's field manager: it writes the Ready condition
// (never Unknown) and the taints a node registers with.
const kubelet = "kubelet"

// InTrouble reports whether the node shows lifecycle state worth knowing the
// writer of: a Ready condition Unknown, or a lifecycle taint. Healthy nodes,
// nearly all of them, are not.
func InTrouble(node *corev1.Node) bool {
	if c := health.ReadyCondition(node); c != nil && c.Status == corev1.ConditionUnknown {
		return true
	}
	for _, t := range node.Spec.Taints {
		if eviction.IsLifecycleTaint(t.Key) {
			return true
		}
	}
	return false
}

// Trim returns the entries of managed that hold a part of the node's
// lifecycle state, each trimmed to the part it holds, or nil for a node not
// in trouble, or when none does. The kubelet's are left out.
func Trim(node *corev1.Node, managed []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if !InTrouble(node) {
		return nil
	}
	var out []metav1.ManagedFieldsEntry
	for _, e := range managed {
		if e.Manager == kubelet || e.FieldsV1 == nil {
			continue
		}
		holds := holdings(e.FieldsV1.GetRawBytes())
		if len(holds) == 0 {
			continue
		}
		out = append(out, metav1.ManagedFieldsEntry{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Time: e.Time,
			FieldsType: e.FieldsType, Subresource: e.Subresource, FieldsV1: metav1.NewFieldsV1(string(encode(holds))),
		})
	}
	return out
}

// Of returns who holds which part of the node's lifecycle state, read from
// entries Trim kept (or whole ones).
func Of(managed []metav1.ManagedFieldsEntry) []Entry {
	var out []Entry
	for _, e := range managed {
		if e.Manager == kubelet || e.FieldsV1 == nil {
			continue
		}
		if holds := holdings(e.FieldsV1.GetRawBytes()); len(holds) > 0 {
			out = append(out, Entry{Manager: e.Manager, Time: ptrTime(e.Time), Holds: holds})
		}
	}
	return out
}

func ptrTime(t *metav1.Time) metav1.Time {
	if t == nil {
		return metav1.Time{}
	}
	return *t
}

// fieldSet is the shape of FieldsV1, as far as it is read here.
type fieldSet map[string]json.RawMessage

// readyKey is the key of the Ready condition in the conditions list's
// field set.
const readyKey = `k:{"type":"Ready"}`

// holdings returns which parts of a node's lifecycle state the field set
// raw holds: the Ready condition's status, and the taints.
func holdings(raw []byte) []What {
	var holds []What
	var top fieldSet
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	if has(top, "f:spec", "f:taints") {
		holds = append(holds, Taints)
	}
	if has(top, "f:status", "f:conditions", readyKey, "f:status") {
		holds = append(holds, Mark)
	}
	return holds
}

// has reports whether the path of keys leads somewhere in set.
func has(set fieldSet, path ...string) bool {
	for i, key := range path {
		raw, ok := set[key]
		if !ok {
			return false
		}
		if i == len(path)-1 {
			return true
		}
		set = nil
		if json.Unmarshal(raw, &set) != nil {
			return false
		}
	}
	return false
}

// encode writes the field set that holds exactly holds.
func encode(holds []What) []byte {
	top := map[string]any{}
	for _, h := range holds {
		switch h {
		case Taints:
			top["f:spec"] = map[string]any{"f:taints": map[string]any{}}
		case Mark:
			top["f:status"] = map[string]any{"f:conditions": map[string]any{readyKey: map[string]any{"f:status": map[string]any{}}}}
		}
	}
	raw, _ := json.Marshal(top)
	return raw
}

// ManagerOf returns the field manager the apiserver records for requests
// that carry userAgent and name none: the user agent up to its first "/",
// at most 128 characters. An empty userAgent is client-go's default.
func ManagerOf(userAgent string) string {
	if userAgent == "" {
		userAgent = rest.DefaultKubernetesUserAgent()
	}
	m, _, _ := strings.Cut(userAgent, "/")
	if len(m) > 128 {
		m = m[:128]
	}
	return m
}
