package policy

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
)

// Set is the policies in force, in precedence order: a node selected by
// several follows the oldest, then the first by name.
type Set struct {
	defaults Settings
	pools    []pool
	// Invalid holds, by policy name, why a policy is not in force.
	Invalid map[string]error
}

type pool struct {
	selector labels.Selector
	settings Settings
}

// NewSet resolves the policies against the defaults. A policy that cannot
// be resolved is reported in Invalid, and fails closed: when its selector
// parses (its settings are invalid only in combination with the flags), it
// still claims the nodes it selects, which follow the flags' timing but are
// held: no NoExecute taint, no pod marked NotReady or evicted, until it is
// fixed or deleted. Editing a policy into something wrong must not release
// what it held. A selector that does not parse selects no node.
func NewSet(defaults Settings, policies []v1alpha1.NodeHealthPolicy) *Set {
	ordered := slices.Clone(policies)
	slices.SortFunc(ordered, func(a, b v1alpha1.NodeHealthPolicy) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	s := &Set{defaults: defaults, Invalid: map[string]error{}}
	for i := range ordered {
		p := &ordered[i]
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodeSelector)
		if err != nil {
			s.Invalid[p.Name] = fmt.Errorf("nodeSelector: %w", err)
			continue
		}
		settings, err := Resolve(defaults, p)
		if err != nil {
			s.Invalid[p.Name] = err
			settings = defaults
			settings.Pool = p.Name
			settings.Disruption.Invalid = true
		}
		s.pools = append(s.pools, pool{selector: sel, settings: settings})
	}
	return s
}

// Defaults returns the settings of the nodes no policy selects.
func (s *Set) Defaults() Settings { return s.defaults }

// For returns the settings a node with the given labels follows.
func (s *Set) For(nodeLabels map[string]string) Settings {
	set := labels.Set(nodeLabels)
	for i := range s.pools {
		if s.pools[i].selector.Matches(set) {
			return s.pools[i].settings
		}
	}
	return s.defaults
}

// Selects reports whether the named policy's selector matches the labels,
// whether or not the node follows it.
func (s *Set) Selects(name string, nodeLabels map[string]string) bool {
	for i := range s.pools {
		if s.pools[i].settings.Pool == name {
			return s.pools[i].selector.Matches(labels.Set(nodeLabels))
		}
	}
	return false
}

// Pools returns the settings of every policy in force, in precedence order.
func (s *Set) Pools() []Settings {
	out := make([]Settings, len(s.pools))
	for i := range s.pools {
		out[i] = s.pools[i].settings
	}
	return out
}
