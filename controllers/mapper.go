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

// newMapper is the manager's REST mapper: controller-runtime's dynamic
// one, with each mapping it finds for one version remembered.
//
// The cache of Leases, kept for kube-node-lease alone, asks the mapper on
// every read whether a Lease is namespaced, and the dynamic mapper answers
// by asking the mapper of each API group it knows in turn, each miss an
// error made and dropped: at 1,000 nodes that was a tenth of everything the
// controller allocated. A mapping found stays right: a kind's scope and
// resource never change, and a version removed since is refused by the
// apiserver as it would be otherwise. What is not found is asked again
// each time, as the dynamic mapper learns new kinds.
func newMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("REST mapper: %w", err)
	}
	return rememberMappings(m), nil
}

// rememberMappings returns m with each mapping it finds for one version
// remembered.
func rememberMappings(m meta.RESTMapper) meta.RESTMapper {
	return &remembered{RESTMapper: m, found: map[mappingKey]*meta.RESTMapping{}}
}

// remembered is a RESTMapper that remembers the mappings it found.
type remembered struct {
	meta.RESTMapper
	mu    sync.RWMutex
	found map[mappingKey]*meta.RESTMapping
}

// mappingKey is a kind in one version.
type mappingKey struct {
	gk      schema.GroupKind
	version string
}

// RESTMapping returns the mapping of the kind, remembered when asked for in
// one version.
func (m *remembered) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk: gk, version: versions[0]}
	m.mu.RLock()
	mapping, ok := m.found[key]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.found[key] = mapping
	m.mu.Unlock()
	return mapping, nil
}
