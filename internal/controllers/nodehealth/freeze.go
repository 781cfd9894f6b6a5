package nodehealth

import (
	"context"
	"fmt"
	"strconv"

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

// kept reads the partition freeze and the recent unwatched spans the
// cluster keeps. A read that fails stops the seed, to be tried again: a new
// leader that went on without them could lose a freeze its predecessor
// held. A record that does not parse is no record, and said so.
func (r *Reconciler) kept(ctx context.Context) (safety.Kept, error) {
	ns := &corev1.Namespace{}
	if err := r.d.APIReader.Get(ctx, client.ObjectKey{Name: LeaseNamespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return safety.Kept{}, nil
		}
		return safety.Kept{}, fmt.Errorf("read the partition freeze kept on namespace %s: %w", LeaseNamespace, err)
	}
	log := ctrl.LoggerFrom(ctx)
	kept, err := safety.KeptOn(ns)
	if err != nil {
		log.Error(err, "Ignoring what the namespace keeps that does not parse", "Namespace", LeaseNamespace)
	}
	if rec := kept.Freeze; rec != nil {
		log.Info("Carrying on with the partition freeze kept in the cluster",
			"since", rec.Since, "from", rec.From, "cooldownSince", rec.ClearSince)
	}
	return kept, nil
}

// KeepFreeze writes the partition freeze (nil for none) and the recent
// unwatched spans onto the kube-node-lease Namespace, in one merge patch of
// the two annotations, null removing each that has none.
func (p port) KeepFreeze(ctx context.Context, freeze *disruption.Record, unwatched []disruption.Span) error {
	f, u := "null", "null"
	if freeze != nil {
		f = strconv.Quote(safety.EncodeFreeze(*freeze))
	}
	if len(unwatched) > 0 {
		u = strconv.Quote(safety.EncodeUnwatched(unwatched))
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s,%q:%s}}}`, safety.AnnotationFreeze, f, safety.AnnotationUnwatched, u)
	ns := &corev1.Namespace{}
	ns.Name = LeaseNamespace
	if err := p.r.d.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patch namespace %s: %w", LeaseNamespace, err)
	}
	return nil
}
