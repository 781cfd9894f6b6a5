package reporter

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// leaseFirstBackoff is the backoff after the first failed round of lease
// renewal; it doubles after each failed round up to the MaxBackoff, and
// every wait is jittered (see retryAfter).
const leaseFirstBackoff = 200 * time.Millisecond

// renewLeaseUntilDone renews the Lease, retrying failed rounds with backoff
// until one succeeds or ctx ends: the Lease is the heartbeat that matters, so
// it does not wait for the next renewal interval.
func (r *Reporter) renewLeaseUntilDone(ctx context.Context) {
	backoff := leaseFirstBackoff
	for {
		err := r.renewLease(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		wait := r.retryAfter(backoff)
		klog.FromContext(ctx).Error(err, "Failed to renew lease, will retry", "retryAfter", wait)
		if !r.sleep(ctx, wait) {
			return
		}
		backoff = r.backoff(backoff)
	}
}

// renewLease makes up to maxTries immediate attempts at renewing the Lease.
func (r *Reporter) renewLease(ctx context.Context) error {
	var err error
	for try := range maxTries {
		if err = r.tryRenewLease(ctx); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		log := klog.FromContext(ctx).V(2)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
			// Someone else wrote or deleted the Lease (or the Node): the
			// next try reads it again. Not a sign of a dead connection.
			log.Info("Lease changed since it was read; reading it again", "try", try+1, "error", err.Error())
			continue
		}
		log.Info("Lease renewal failed", "try", try+1, "error", err.Error())
		if try > 0 {
			r.onRepeatedFailure()
		}
	}
	return fmt.Errorf("renew lease %s/%s: %d tries failed: %w", corev1.NamespaceNodeLease, r.cfg.NodeName, maxTries, err)
}

// tryRenewLease updates the Lease kept from the last successful write, or
// reads it first when there is none, or creates it when it is missing.
func (r *Reporter) tryRenewLease(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	leases := r.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	base := r.lease
	if base == nil {
		got, err := leases.Get(ctx, r.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return r.createLease(ctx)
		}
		if err != nil {
			return fmt.Errorf("get lease: %w", err)
		}
		base = got
	}
	lease := leaseToUpdate(base)
	r.assertLease(lease)
	if len(lease.OwnerReferences) == 0 {
		owner, err := r.nodeOwner(ctx)
		if err != nil {
			return err
		}
		lease.OwnerReferences = []metav1.OwnerReference{owner}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			r.lease = nil
		}
		return fmt.Errorf("update lease: %w", err)
	}
	r.lease = updated
	return nil
}

// leaseToUpdate returns a copy of base to renew, without its managed fields:
// an update that sends none keeps the server's, and they would add a few
// hundred bytes to every renewal. base itself, the Lease last read or
// written, is left whole: its resourceVersion is what makes a concurrent
// write a conflict, and it is the base again if this update fails otherwise.
func leaseToUpdate(base *coordinationv1.Lease) *coordinationv1.Lease {
	meta := base.ObjectMeta
	// Nil, not empty: the field manager reads an empty list as a reset.
	meta.ManagedFields = nil
	return &coordinationv1.Lease{TypeMeta: base.TypeMeta, ObjectMeta: *meta.DeepCopy(), Spec: *base.Spec.DeepCopy()}
}

// createLease creates the Lease, owned by the Node so that it goes with it.
func (r *Reporter) createLease(ctx context.Context) error {
	owner, err := r.nodeOwner(ctx)
	if err != nil {
		return err
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:            r.cfg.NodeName,
			Namespace:       corev1.NamespaceNodeLease,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
	}
	r.assertLease(lease)
	if err := ctx.Err(); err != nil {
		return err
	}
	created, err := r.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create lease: %w", err)
	}
	r.lease = created
	klog.FromContext(ctx).V(1).Info("Created lease", "Lease", klog.KObj(created))
	return nil
}

// assertLease sets what the reporter owns in a Lease, renewed now.
func (r *Reporter) assertLease(lease *coordinationv1.Lease) {
	lease.Spec.HolderIdentity = ptr.To(r.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(r.cfg.LeaseDurationSeconds)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: r.clock.Now()}
}

// nodeOwner reads the Node for the owner reference of its Lease.
func (r *Reporter) nodeOwner(ctx context.Context) (metav1.OwnerReference, error) {
	node, err := r.client.CoreV1().Nodes().Get(ctx, r.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("get node %q to own its lease: %w", r.cfg.NodeName, err)
	}
	return metav1.OwnerReference{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}, nil
}
