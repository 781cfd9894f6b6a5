package nodehealth

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// The permission to keep the partition freeze on the kube-node-lease
// Namespace, and no other Namespace.
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-node-lease,verbs=patch

// freezeKeeper keeps the model's partition freeze in the cluster, on the
// kube-node-lease Namespace (safety.AnnotationFreeze), so that a new leader
// carries on with it. A write that fails is tried again at the next change
// and at every resync until one lands.
type freezeKeeper struct {
	mu    sync.Mutex
	dirty bool
}

// keptFreeze reads the partition freeze the cluster keeps, or nil for none.
// A read that fails stops the seed, to be tried again: a new leader that
// went on without it could lose a freeze its predecessor held. A record
// that does not parse is no record, and said so.
func (r *Reconciler) keptFreeze(ctx context.Context) (*disruption.Record, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: LeaseNamespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the partition freeze kept on namespace %s: %w", LeaseNamespace, err)
	}
	v, ok := ns.Annotations[safety.AnnotationFreeze]
	if !ok {
		return nil, nil
	}
	rec, err := safety.DecodeFreeze(v)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Ignoring the partition freeze kept on the namespace", "Namespace", LeaseNamespace)
		return nil, nil
	}
	ctrl.LoggerFrom(ctx).Info("Carrying on with the partition freeze kept in the cluster",
		"since", rec.Since, "from", rec.From, "cooldownSince", rec.ClearSince)
	return &rec, nil
}

// keepFreeze writes the model's partition freeze to the cluster if it
// changed since the last write that landed: the freeze itself, or nothing
// once it ended.
func (r *Reconciler) keepFreeze(ctx context.Context, changed bool) {
	k := &r.freeze
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dirty = k.dirty || changed
	if !k.dirty {
		return
	}
	ns := &corev1.Namespace{}
	ns.Name = LeaseNamespace
	// A merge patch of the one annotation, which null removes.
	if err := r.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, freezePatch(r.model()))); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Could not keep the partition freeze in the cluster; trying again at the next resync",
			"Namespace", LeaseNamespace)
		return
	}
	k.dirty = false
}

// freezePatch returns the merge patch that sets the freeze annotation to the
// model's freeze, or removes it.
func freezePatch(m *safety.Model) []byte {
	rec, ok := m.FreezeRecord()
	if !ok {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, safety.AnnotationFreeze)
	}
	return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, safety.AnnotationFreeze, safety.EncodeFreeze(rec))
}
