package nodehealth

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/taints"
)

// write carries out the taints and countdown record a look decided, in one
// patch locked to the node's resourceVersion, and tells what it did. A
// write that took its zone's token and failed gives the token back, and
// wakes the nodes waiting behind it.
func (r *Reconciler) write(ctx context.Context, node *corev1.Node, d safety.Decision) error {
	log := ctrl.LoggerFrom(ctx)
	if d.Waiting != "" {
		log.V(1).Info("NoExecute taint held back", "taint", d.Want, "reason", d.Waiting, "retryAt", d.Retry)
	}
	w := d.Write
	if w == nil {
		return nil
	}
	patched := w.Apply(node)
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})); err != nil {
		r.wakes.now(r.model().TaintFailed(node.Name, w)...)
		return fmt.Errorf("patch node %q taints: %w", node.Name, err)
	}
	*node = *patched
	switch {
	case w.Added != "":
		taintsApplied.WithLabelValues(zoneLabel(node), d.Pool).Inc()
		log.Info("Tainted node NoExecute", "taint", w.Added, "countdown", countdownText(w.Countdown))
	case w.Removed && d.Held != "":
		log.Info("Removing NoExecute taint while the node is held; its countdown is kept", "reason", d.Held,
			"countdown", countdownText(w.Countdown))
	}
	log.V(1).Info("Updated taints", "noSchedule", taints.WantedNoSchedule(node), "noExecute", d.Want)
	return nil
}

// countdownText says what a countdown record keeps, for the logs.
func countdownText(c *safety.Countdown) string {
	if c == nil {
		return "new"
	}
	return fmt.Sprintf("started %s, %s served", c.Started.UTC().Format("15:04:05"), c.Served())
}
