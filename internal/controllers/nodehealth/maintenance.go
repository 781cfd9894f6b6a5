package nodehealth

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// Reasons of the events that report a node's NoExecute taint held for its
// maintenance.
const (
	ReasonMaintenanceHold      = "MaintenanceHold"
	ReasonMaintenanceHoldEnded = "MaintenanceHoldEnded"
	actionHoldForMaintenance   = "HoldForMaintenance"
)

// maintenanceHolds remembers the nodes whose NoExecute taint a maintenance
// condition holds, so that the start and the end of each hold are told
// once. What holds is read from the cluster at every look; this only
// remembers what was told, and a new leader tells it again.
type maintenanceHolds struct {
	mu   sync.Mutex
	held map[string]struct{}
}

// set records whether the node is held, and reports whether that changed.
func (h *maintenanceHolds) set(name string, held bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, was := h.held[name]
	if was == held {
		return false
	}
	if held {
		if h.held == nil {
			h.held = make(map[string]struct{})
		}
		h.held[name] = struct{}{}
	} else {
		delete(h.held, name)
	}
	maintenanceHeld.Set(float64(len(h.held)))
	return true
}

// reconcileMaintenance tells when a maintenance condition starts or stops
// holding the node's NoExecute taint; the model has set the node's next look
// for when its maintenance grace runs out.
func (r *Reconciler) reconcileMaintenance(ctx context.Context, node *corev1.Node, d safety.Decision) {
	m, held, want := d.Maintenance, d.InMaintenance, d.Want
	// Only a node that would be tainted is held; a Ready node in
	// maintenance counts as any Ready node.
	if !r.told.maintenance.set(node.Name, held && want != "") {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	switch {
	case held && want != "":
		log.Info("NoExecute taint held while the node is in maintenance",
			"condition", m.Condition, "since", m.Since, "until", m.Until)
		r.d.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonMaintenanceHold, actionHoldForMaintenance,
			"Node %s is in maintenance (%s%s): its NoExecute taint and evictions are held until %s",
			node.Name, m.Condition, sinceText(m.Since), m.Until.UTC().Format(time.RFC3339))
	case want == "":
		log.V(1).Info("Node in maintenance is back; nothing is held")
	case m.In():
		log.Info("Maintenance grace ran out; the node is handled as any other",
			"condition", m.Condition, "since", m.Since, "until", m.Until)
		r.d.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonMaintenanceHoldEnded, actionHoldForMaintenance,
			"Node %s is still %s%s, and its maintenance grace ran out at %s: it is tainted NoExecute and its pods evicted as any %s node's",
			node.Name, m.Condition, sinceText(m.Since), m.Until.UTC().Format(time.RFC3339), unhealthyWord(want))
	default:
		log.Info("Maintenance is over and the node is not back; the node is handled as any other")
		r.d.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonMaintenanceHoldEnded, actionHoldForMaintenance,
			"Node %s is no longer in maintenance and is not back: it is tainted NoExecute and its pods evicted as any %s node's, from now",
			node.Name, unhealthyWord(want))
	}
}

// forgetMaintenance drops a deleted node's hold.
func (r *Reconciler) forgetMaintenance(name string) { r.told.maintenance.set(name, false) }

func sinceText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " since " + t.UTC().Format(time.RFC3339)
}

// unhealthyWord names the failure a lifecycle NoExecute taint stands for.
func unhealthyWord(taint string) string {
	if taint == corev1.TaintNodeNotReady {
		return "not ready"
	}
	return "unreachable"
}
