package reporter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// registerFirstBackoff is the backoff after the first failed registration;
// it doubles after each failure up to the MaxBackoff, and every wait is
// jittered (see retryAfter).
const registerFirstBackoff = 100 * time.Millisecond

// register creates the Node, retrying with backoff until it exists. It says
// whether it created the Node (rather than finding it), and fails only when
// ctx ends.
func (r *Reporter) register(ctx context.Context) (bool, error) {
	log := klog.FromContext(ctx)
	backoff := registerFirstBackoff
	for {
		created, err := r.tryRegister(ctx)
		if err == nil {
			return created, nil
		}
		if ctx.Err() != nil {
			return false, err
		}
		wait := r.retryAfter(backoff)
		log.Error(err, "Failed to register node, will retry", "retryAfter", wait)
		if !r.sleep(ctx, wait) {
			return false, fmt.Errorf("register node %q: %w", r.cfg.NodeName, ctx.Err())
		}
		backoff = r.backoff(backoff)
	}
}

func (r *Reporter) tryRegister(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := r.clock.Now()
	node, err := r.initialNode(now)
	if err != nil {
		// A failing setter must not keep the node from registering: the
		// next status sync tries it again.
		klog.FromContext(ctx).Error(err, "Failed to compute part of the initial node status")
	}
	_, err = r.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	switch {
	case err == nil:
		// The created Node carries the first status: a change, whose
		// next report is spread like any other's.
		r.lastReport, r.reportDelay = now, r.reportSpread()
		klog.FromContext(ctx).V(1).Info("Registered node")
		return true, nil
	case apierrors.IsAlreadyExists(err):
		klog.FromContext(ctx).V(2).Info("Node already registered; adopting it")
		return false, nil
	default:
		return false, fmt.Errorf("create node %q: %w", r.cfg.NodeName, err)
	}
}

// initialNode is the Node to register: the configured labels over the
// kubelet's default ones, and the status the setters compute.
func (r *Reporter) initialNode(now time.Time) (*corev1.Node, error) {
	labels := map[string]string{
		corev1.LabelHostname:   r.cfg.NodeName,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
	}
	maps.Copy(labels, r.cfg.Labels)
	return r.computeNode(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: r.cfg.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(r.cfg.RegisterWithTaints)},
	}, now)
}
