package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// groupMappers returns a mapper that, like the dynamic one, asks a mapper
// per API group in turn, and the coordination group's own, still empty.
func groupMappers() (meta.RESTMapper, *meta.DefaultRESTMapper) {
	var mappers meta.MultiRESTMapper
	for _, gv := range []schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}, {Group: "policy", Version: "v1"}} {
		m := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
		m.Add(gv.WithKind("Thing"), meta.RESTScopeNamespace)
		mappers = append(mappers, m)
	}
	coordination := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "coordination.k8s.io", Version: "v1"}})
	return append(mappers, coordination), coordination
}

func TestRememberedMappingsAreFoundOnceAndCheapAfter(t *testing.T) {
	inner, coordination := groupMappers()
	m := &remembered{RESTMapper: inner, found: map[schema.GroupVersionKind]*meta.RESTMapping{}}
	lease := schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}
	if _, err := m.RESTMapping(lease, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("an unknown kind: got %v, want no match", err)
	}
	// The kind appears later, as a CRD's does: a miss is not remembered.
	coordination.Add(lease.WithVersion("v1"), meta.RESTScopeNamespace)
	first, err := m.RESTMapping(lease, "v1")
	if err != nil {
		t.Fatalf("a kind known since: %v", err)
	}
	if first.Scope.Name() != meta.RESTScopeNameNamespace || first.Resource.Resource != "leases" {
		t.Errorf("mapping = %+v", first)
	}
	again, err := m.RESTMapping(lease, "v1")
	if err != nil || again != first {
		t.Errorf("asked again: %v, %v; want the mapping found first", again, err)
	}
	// The one allocation left is the caller's: its list of versions,
	// passed through an interface.
	remembered := testing.AllocsPerRun(100, func() { _, _ = m.RESTMapping(lease, "v1") })
	underneath := testing.AllocsPerRun(100, func() { _, _ = inner.RESTMapping(lease, "v1") })
	if remembered > 1 || underneath <= remembered {
		t.Errorf("a remembered mapping costs %v allocations, the mapper underneath %v: want at most 1, and fewer", remembered, underneath)
	}
	t.Logf("allocations a mapping: remembered %v, underneath %v", remembered, underneath)
	// More than one version is passed through to the mapper underneath.
	if _, err := m.RESTMapping(lease, "v2", "v1"); err != nil {
		t.Errorf("two versions: %v", err)
	}
}
