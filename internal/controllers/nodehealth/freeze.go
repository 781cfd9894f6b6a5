package nodehealth

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// The permission to keep the partition freeze on the kube-node-lease
// Namespace, and no other Namespace.
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-node-lease,verbs=patch

// freezeKeeper keeps the model's partition freeze and its recent unwatched
// spans in the cluster, on the kube-node-lease Namespace
// (safety.AnnotationFreeze, safety.AnnotationUnwatched), so that a new leader
// carries on with them. A write that fails is tried again at the next change
// and at every resync until one lands.
type freezeKeeper struct {
	mu    sync.Mutex
	dirty bool
	// stale asks the next keepFreeze to write, whatever changed. It is
	// set without mu: the answer that ends an outage may be the answer to
	// keepFreeze's own patch, whose request path tells of the outage while
	// keepFreeze holds mu.
	stale    atomic.Bool
	kickOnce sync.Once
	// kick asks the resync, which runs on the leader alone, to write the
	// records at once.
	kick chan struct{}
}

// markStale has the next keepFreeze write the records, whatever changed,
// and asks the resync to write them now. It never blocks.
func (k *freezeKeeper) markStale() {
	k.stale.Store(true)
	select {
	case k.kicked() <- struct{}{}:
	default:
	}
}

// kicked returns the channel markStale signals on.
func (k *freezeKeeper) kicked() chan struct{} {
	k.kickOnce.Do(func() { k.kick = make(chan struct{}, 1) })
	return k.kick
}

// kept reads the partition freeze and the recent unwatched spans the
// cluster keeps. A read that fails stops the seed, to be tried again: a new
// leader that went on without them could lose a freeze its predecessor
// held. A record that does not parse is no record, and said so.
func (r *Reconciler) kept(ctx context.Context) (safety.Kept, error) {
	var kept safety.Kept
	ns := &corev1.Namespace{}
	if err := r.d.APIReader.Get(ctx, client.ObjectKey{Name: LeaseNamespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return kept, nil
		}
		return kept, fmt.Errorf("read the partition freeze kept on namespace %s: %w", LeaseNamespace, err)
	}
	log := ctrl.LoggerFrom(ctx)
	if v, ok := ns.Annotations[safety.AnnotationFreeze]; ok {
		rec, err := safety.DecodeFreeze(v)
		if err != nil {
			log.Error(err, "Ignoring the partition freeze kept on the namespace", "Namespace", LeaseNamespace)
		} else {
			log.Info("Carrying on with the partition freeze kept in the cluster",
				"since", rec.Since, "from", rec.From, "cooldownSince", rec.ClearSince)
			kept.Freeze = &rec
		}
	}
	if v, ok := ns.Annotations[safety.AnnotationUnwatched]; ok {
		spans, err := safety.DecodeUnwatched(v)
		if err != nil {
			log.Error(err, "Ignoring the unwatched spans kept on the namespace", "Namespace", LeaseNamespace)
		} else {
			kept.Unwatched = spans
		}
	}
	return kept, nil
}

// keepFreeze writes the model's partition freeze and its recent unwatched
// spans to the cluster if they changed since the last write that landed
// (or were marked stale): the freeze itself, or nothing once it ended, and
// the spans, or nothing once none is recent.
func (r *Reconciler) keepFreeze(ctx context.Context, changed bool) {
	k := &r.world.freeze
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dirty = k.stale.Swap(false) || k.dirty || changed
	if !k.dirty {
		return
	}
	ns := &corev1.Namespace{}
	ns.Name = LeaseNamespace
	// A merge patch of the two annotations, which null removes.
	if err := r.d.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, freezePatch(r.model(), r.d.Clock.Now()))); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Could not keep the partition freeze in the cluster; trying again at the next resync",
			"Namespace", LeaseNamespace)
		return
	}
	k.dirty = false
}

// freezePatch returns the merge patch that sets the freeze annotation to the
// model's freeze and the unwatched spans' annotation to its recent ones, or
// removes each that has none.
func freezePatch(m *safety.Model, now time.Time) []byte {
	freeze, unwatched := "null", "null"
	if rec, ok := m.FreezeRecord(); ok {
		freeze = strconv.Quote(safety.EncodeFreeze(rec))
	}
	if spans := m.UnwatchedSpans(now); len(spans) > 0 {
		unwatched = strconv.Quote(safety.EncodeUnwatched(spans))
	}
	return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s,%q:%s}}}`, safety.AnnotationFreeze, freeze,
		safety.AnnotationUnwatched, unwatched)
}
