package controllers

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newMapper is the manager's REST mapper: controller-runtime's dynamic one,
// remembering each mapping it finds for one version. The cache of Leases,
// kept for kube-node-lease alone, asks on every read whether a Lease is
// namespaced, and the dynamic mapper answers by asking each API group's
// mapper in turn, making an error for each miss: a tenth of all the
// controller allocated at 1,000 nodes. A mapping found stays right (a
// kind's scope and resource never change; a version since removed is
// refused by the apiserver all the same); a miss is asked again each time.
func newMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("REST mapper: %w", err)
	}
	return &remembered{RESTMapper: m, found: map[schema.GroupVersionKind]*meta.RESTMapping{}}, nil
}

// remembered is a RESTMapper that remembers the mappings it found.
type remembered struct {
	meta.RESTMapper
	mu    sync.RWMutex
	found map[schema.GroupVersionKind]*meta.RESTMapping
}

// RESTMapping returns the kind's mapping, remembered when asked for in one
// version.
func (m *remembered) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	gvk := gk.WithVersion(versions[0])
	m.mu.RLock()
	mapping, ok := m.found[gvk]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		m.mu.Lock()
		m.found[gvk] = mapping
		m.mu.Unlock()
	}
	return mapping, err
}
