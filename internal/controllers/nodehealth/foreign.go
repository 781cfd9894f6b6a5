package nodehealth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/owners"
)

// ReasonForeignLifecycleWriter is the reason of the warning that another
// controller marks or taints nodes beside this one.
const ReasonForeignLifecycleWriter = "ForeignLifecycleWriter"

const actionNoticeWriter = "NoticeWriter"

// kubeControllerManager is kube-controller-manager's field manager: the
// writer of its node lifecycle and taint eviction loops' marks and taints.
const kubeControllerManager = "kube-controller-manager"

var foreignWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "node_lifecycle_foreign_writes_total",
	Help: "Nodes whose lifecycle state another writer changed while this controller decides, by that writer's field manager and " +
		"what it wrote: mark (the Ready condition set Unknown) or taints (a node lifecycle taint, by kube-controller-manager). " +
		"Each write is counted once. Anything but 0 means kube-controller-manager's node lifecycle loops, or another controller, " +
		"are still on.",
}, []string{"manager", "write"})

// foreignSeen remembers the last foreign write told of each node's mark and
// taints, so that each write is told once.
type foreignSeen struct {
	mu   sync.Mutex
	told map[foreignPart]foreignWrite
}

// foreignPart is a part of a node's lifecycle state.
type foreignPart struct {
	node string
	what owners.What
}

// foreignWrite is a write of it, by whom and when.
type foreignWrite struct {
	manager string
	at      time.Time
}

// first reports whether w is new for part, and remembers it.
func (f *foreignSeen) first(part foreignPart, w foreignWrite) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.told == nil {
		f.told = map[foreignPart]foreignWrite{}
	}
	if f.told[part] == w {
		return false
	}
	f.told[part] = w
	return true
}

// forget drops what was told of a node that is gone.
func (f *foreignSeen) forget(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.told, foreignPart{node, owners.Mark})
	delete(f.told, foreignPart{node, owners.Taints})
}

// noticeForeignWriters tells, once each, of another writer of the node's
// lifecycle state since this controller started: a mark (Ready Unknown)
// that another field manager wrote, or a taints list holding a lifecycle
// taint that kube-controller-manager wrote last. Writes from before its
// start are left alone: at a cut-over, the nodes kube-controller-manager
// marked before its loops went off are its, and no longer anyone's
// concern. It reads what the cache kept of the managed fields
// (controllers.StripUnread), and costs nothing for a node not in trouble.
func (r *Reconciler) noticeForeignWriters(ctx context.Context, node *corev1.Node) {
	if r.d.FieldManager == "" || len(node.ManagedFields) == 0 || !owners.InTrouble(node) {
		return
	}
	unknown := false
	if c := health.ReadyCondition(node); c != nil && c.Status == corev1.ConditionUnknown {
		unknown = true
	}
	// Managed fields carry whole seconds.
	since := r.told.started.Truncate(time.Second)
	for _, e := range owners.Of(node.ManagedFields) {
		if e.Manager == r.d.FieldManager || e.Time.Time.Before(since) {
			continue
		}
		for _, what := range e.Holds {
			switch {
			case what == owners.Mark && unknown:
			case what == owners.Taints && e.Manager == kubeControllerManager:
			default:
				continue
			}
			if !r.told.foreign.first(foreignPart{node.Name, what}, foreignWrite{e.Manager, e.Time.UTC()}) {
				continue
			}
			foreignWrites.WithLabelValues(e.Manager, string(what)).Inc()
			text := foreignText(e.Manager, what)
			ctrl.LoggerFrom(ctx).Error(nil, "Another controller writes this node's lifecycle state; two controllers decide its taints and evictions",
				"manager", e.Manager, "write", string(what), "at", e.Time.Time)
			r.d.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonForeignLifecycleWriter, actionNoticeWriter, "%s", text)
		}
	}
}

// foreignText is the event's message for a write of what by manager.
func foreignText(manager string, what owners.What) string {
	var did string
	switch what {
	case owners.Mark:
		did = "marked this node Unknown"
	default:
		did = "wrote this node's taints, with a node lifecycle taint among them,"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s while node-lifecycle-controller decides: two controllers judge this node", manager, did)
	if manager == kubeControllerManager {
		b.WriteString("; turn kube-controller-manager's node-lifecycle-controller and taint-eviction-controller off")
	}
	return b.String()
}
