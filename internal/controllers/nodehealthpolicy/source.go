package nodehealthpolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// Source owns the policies in force: it alone reads them from the cache,
// keeps the disruption guard's pools in line with them, and, after each
// change of a policy's spec, queues what the change affects in every
// controller that subscribed (Nodes, Policies). It refreshes before it
// queues, so no reconcile runs on a policy set older than the change that
// woke it. It is safe for concurrent use; Start runs it.
type Source struct {
	// Reader lists NodeHealthPolicies and Nodes, from the manager's cache.
	Reader client.Reader
	// Informers gives the NodeHealthPolicy informer whose changes Start
	// follows: the manager's cache.
	Informers cache.Informers
	// Defaults are the settings of nodes no policy selects: the flags.
	Defaults policy.Settings
	// Pools gets each pool's disruption settings: the safety model, which
	// tells what they change at its next look, and the nodes the change
	// affects are looked at again through Nodes.
	Pools interface {
		SetPool(name string, p *disruption.Pool, now time.Time)
	}
	// Clock times the pools' updates.
	Clock clock.PassiveClock

	// refreshing guards the refreshes and what they keep: version, pools.
	refreshing sync.Mutex
	version    string // the policies' generations the set was built from
	pools      []string
	set        atomic.Pointer[policy.Set]

	// Subscribers, registered before Start.
	nodeSubs   []nodeSub
	policySubs []chan event.TypedGenericEvent[*v1alpha1.NodeHealthPolicy]
	changed    chan struct{}
}

// nodeSub is a controller that looks again at the nodes keep accepts
// after a policy change.
type nodeSub struct {
	keep   func(*corev1.Node) bool
	events chan event.TypedGenericEvent[*corev1.Node]
}

// Set returns the policies in force, loading them on first use.
func (s *Source) Set(ctx context.Context) *policy.Set {
	if set := s.set.Load(); set != nil {
		return set
	}
	if _, _, err := s.refresh(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading NodeHealthPolicies failed; nodes follow the flags until they can be read")
		return policy.NewSet(s.Defaults, nil)
	}
	return s.set.Load()
}

// For returns the settings the node follows.
func (s *Source) For(ctx context.Context, node *corev1.Node) policy.Settings {
	return s.Set(ctx).For(node.Labels)
}

// refresh rebuilds the policy set from the cache when a policy's spec
// changed since the last build, and reports whether it did, with the
// policies it read. Refreshes run one at a time, list and all, so that a
// refresh that listed earlier never replaces the set of one that listed
// later.
func (s *Source) refresh(ctx context.Context) (bool, []v1alpha1.NodeHealthPolicy, error) {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	list := &v1alpha1.NodeHealthPolicyList{}
	if err := s.Reader.List(ctx, list); err != nil {
		return false, nil, fmt.Errorf("list NodeHealthPolicies: %w", err)
	}
	version := versionOf(list.Items)
	if s.set.Load() != nil && version == s.version {
		return false, list.Items, nil
	}
	set := policy.NewSet(s.Defaults, list.Items)
	s.set.Store(set)
	s.version = version
	s.syncPools(set)
	log := ctrl.LoggerFrom(ctx)
	for name, err := range set.Invalid {
		log.Error(err, "NodeHealthPolicy not in force", "NodeHealthPolicy", name)
	}
	return true, list.Items, nil
}

// syncPools gives every pool its settings and drops the pools whose policy
// is gone.
func (s *Source) syncPools(set *policy.Set) {
	if s.Pools == nil {
		return
	}
	now := s.now()
	var names []string
	for _, p := range set.Pools() {
		names = append(names, p.Pool)
		s.Pools.SetPool(p.Pool, &p.Disruption, now)
	}
	for _, old := range s.pools {
		if !slices.Contains(names, old) {
			s.Pools.SetPool(old, nil, now)
		}
	}
	s.pools = names
}

func (s *Source) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// versionOf identifies a list of policies by their specs' identities:
// name, UID and generation. Status writes do not change it.
func versionOf(items []v1alpha1.NodeHealthPolicy) string {
	parts := make([]string, 0, len(items))
	for i := range items {
		p := &items[i]
		parts = append(parts, fmt.Sprintf("%s/%s/%d", p.Name, p.UID, p.Generation))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
