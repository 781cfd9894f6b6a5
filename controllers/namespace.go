package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/transient"
)

// ensureLeaseNamespace creates kube-node-lease when it is missing. The
// apiserver normally creates it; a control plane that does not leaves the
// kubelets nowhere to write their Leases.
//
// It runs at start, when the apiserver may be restarting or shedding load,
// and an error it returns stops the manager. So it retries, with a jittered
// exponential backoff capped at 30s and until ctx ends, whatever may pass:
// server errors, 429s, timeouts and failed connections. It retries a 401 or
// 403 too, logging each as an error: credentials and RBAC can be fixed while
// the controller runs, and the controller needs the namespace only for the
// kubelets, so stopping would take node health down for a missing grant. A
// request the apiserver rejects for any other reason fails at once.
func ensureLeaseNamespace(ctx context.Context, r client.Reader, w client.Writer) error {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", corev1.NamespaceNodeLease)
	ensure := func(ctx context.Context) error {
		ns := &corev1.Namespace{}
		err := r.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns)
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get namespace %s: %w", corev1.NamespaceNodeLease, err)
		}
		ns.Name = corev1.NamespaceNodeLease
		if err := w.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", corev1.NamespaceNodeLease, err)
		}
		log.Info("Created namespace")
		return nil
	}
	// Steps is enough for the delay to double from Duration up to Cap,
	// where it stays.
	backoff := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 16, Cap: 30 * time.Second}
	var last error
	err := backoff.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		err := ensure(ctx)
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			// Stopping: the loop returns the context's error.
			return false, nil
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			log.Error(err, "Not allowed to ensure the namespace, retrying: the controller needs get and create on namespaces")
		case transient.Is(err):
			log.Info("Could not ensure the namespace, retrying", "error", err.Error())
		default:
			return false, err
		}
		last = err
		return false, nil
	})
	if err != nil && last != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("stopped ensuring namespace %s: %w; last attempt: %w", corev1.NamespaceNodeLease, err, last)
	}
	return err
}
