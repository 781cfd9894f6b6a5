package nodehealth

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
)

// podWorkers bounds how many pods of one node are written at once.
const podWorkers = 16

// markPodsNotReady sets Ready=False on the pods of a node the controller
// found silent, so that Services stop sending them traffic, as the executor
// decides (act.Executor.MarkPods): those listed later (bound since, or
// listed late) at the turn the look their listing queues asks for.
func (r *Reconciler) markPodsNotReady(ctx context.Context, node *corev1.Node) error {
	pods, err := r.pods().On(ctx, node.Name)
	if errors.Is(err, podscope.ErrNotListed) {
		ctrl.LoggerFrom(ctx).V(2).Info("Pods not listed yet; marking them NotReady once they are")
		return nil
	}
	if err != nil {
		return err
	}
	return r.Executor().MarkPods(ctx, port{r}, node, pods, r.settings(ctx, node).Grace.Monitor)
}

// pods returns where the node's pods are read: Pods, or the pods of the
// cache Client reads, indexed by node.
func (r *Reconciler) pods() podscope.Pods {
	if r.d.Pods != nil {
		return r.d.Pods
	}
	return podscope.Cluster{Reader: r.d.Client}
}
