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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// Source keeps the policies in force, read from the cache, and the
// disruption guard's pools in line with them. Every controller that acts on
// policies refreshes it when a policy changes, before it queues work, so
// that no reconcile runs on a policy set older than the event that woke it.
// It is safe for concurrent use.
type Source struct {
	// Reader lists NodeHealthPolicies, from the manager's cache.
	Reader client.Reader
	// Defaults are the settings of nodes no policy selects: the flags.
	Defaults policy.Settings
	// Guard gets each pool's disruption settings.
	Guard *disruption.Guard
	// Clock times the guard's updates.
	Clock clock.PassiveClock
	// OnGuardChange, if set, is given what refreshing the guard's pools
	// changed, for metrics and requeues.
	OnGuardChange func(context.Context, disruption.Change)

	mu      sync.Mutex
	version string // the policies' generations the set was built from
	pools   []string
	set     atomic.Pointer[policy.Set]
}

// Set returns the policies in force, loading them on first use.
func (s *Source) Set(ctx context.Context) *policy.Set {
	if set := s.set.Load(); set != nil {
		return set
	}
	if err := s.Refresh(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading NodeHealthPolicies failed; nodes follow the flags until they can be read")
		return policy.NewSet(s.Defaults, nil)
	}
	return s.set.Load()
}

// For returns the settings the node follows.
func (s *Source) For(ctx context.Context, node *corev1.Node) policy.Settings {
	return s.Set(ctx).For(node.Labels)
}

// Refresh rebuilds the policy set from the cache when a policy's spec
// changed since the last build.
func (s *Source) Refresh(ctx context.Context) error {
	list := &v1alpha1.NodeHealthPolicyList{}
	if err := s.Reader.List(ctx, list); err != nil {
		return fmt.Errorf("list NodeHealthPolicies: %w", err)
	}
	version := versionOf(list.Items)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set.Load() != nil && version == s.version {
		return nil
	}
	set := policy.NewSet(s.Defaults, list.Items)
	s.set.Store(set)
	s.version = version
	s.syncGuard(ctx, set)
	log := ctrl.LoggerFrom(ctx)
	for name, err := range set.Invalid {
		log.Error(err, "NodeHealthPolicy not in force", "NodeHealthPolicy", name)
	}
	return nil
}

// syncGuard gives the guard every pool's settings and drops the pools whose
// policy is gone.
func (s *Source) syncGuard(ctx context.Context, set *policy.Set) {
	if s.Guard == nil {
		return
	}
	now := s.now()
	var names []string
	for _, p := range set.Pools() {
		names = append(names, p.Pool)
		s.guardChanged(ctx, s.Guard.SetPool(p.Pool, &p.Disruption, now))
	}
	for _, old := range s.pools {
		if !slices.Contains(names, old) {
			s.guardChanged(ctx, s.Guard.SetPool(old, nil, now))
		}
	}
	s.pools = names
}

func (s *Source) guardChanged(ctx context.Context, c disruption.Change) {
	if s.OnGuardChange != nil && !c.Empty() {
		s.OnGuardChange(ctx, c)
	}
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
