package sim

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// final checks, once every fault is over and the world has settled, that
// each node is where it should be: a live Ready node untainted, a dead or
// not ready one tainted and its overdue pods evicted, unless a hold the
// cluster's state explains keeps it.
func (o *observer) final() {
	w := o.w
	legit := o.legitHolds()
	for _, k := range w.kubelets {
		node := w.nodes[k.name]
		taint := lifecycleTaint(node)
		if k.alive && k.ready {
			if taint != nil {
				o.fail(InvForgotten, "%s is back and Ready but keeps its %s taint", k.name, taint.Key)
			}
			continue
		}
		if why := legit[k.name]; why != "" || w.deniedNode(k.name) {
			// Held, or nothing can be written to it.
			continue
		}
		want := corev1.TaintNodeUnreachable
		if k.alive {
			want = corev1.TaintNodeNotReady
		}
		if taint == nil || taint.Key != want {
			o.fail(InvForgotten, "%s (Ready %s) lacks its %s taint, and nothing in the cluster holds it", k.name,
				health.ReadyStatus(node), want)
			continue
		}
		timeout := w.settings(node).PodEvictionTimeout
		for _, pod := range w.pods[k.name] {
			if _, gone := w.evicted[pod.UID]; gone {
				continue
			}
			if d := eviction.Deadline(&pod, noExecute(node), timeout, w.now); d.Evict && !d.At.After(w.now) {
				o.fail(InvForgotten, "pod %s of %s is due since %s but not evicted", pod.Name, k.name, d.At.Sub(t0))
			}
		}
	}
}

// legitHolds returns, for each node, a hold that the cluster's state
// explains, computed from the ground truth alone: every zone down, a
// partition (a large share of the nodes silent), the pool paused or past its
// breaker, its zone partially disrupted at a rate of 0, or its maintenance.
func (o *observer) legitHolds() map[string]string {
	w := o.w
	type counts struct{ ready, notReady int }
	zones := map[disruption.ZoneID]*counts{}
	pool := counts{}
	lost, judged := 0, 0
	held := o.maintenanceHeld()
	for _, k := range w.kubelets {
		if held[k.name] {
			continue
		}
		judged++
		if !k.alive {
			lost++
		}
		id := disruption.ZoneID{Pool: k.pool, Zone: "r/" + k.zone}
		if zones[id] == nil {
			zones[id] = &counts{}
		}
		up := k.alive && k.ready
		if up {
			zones[id].ready++
		} else {
			zones[id].notReady++
		}
		if k.pool == "p" {
			if up {
				pool.ready++
			} else {
				pool.notReady++
			}
		}
	}
	allDown := len(zones) > 0
	for _, c := range zones {
		if c.ready > 0 {
			allDown = false
		}
	}
	frozen := w.cfg.FreezeThreshold > 0 && lost >= 3 && float64(lost)/float64(judged) >= w.cfg.FreezeThreshold
	limit := int(math.Ceil(percent(w.cfg.PoolMaxUnhealthy.StrVal) * float64(pool.ready+pool.notReady)))
	out := map[string]string{}
	for _, k := range w.kubelets {
		c := zones[disruption.ZoneID{Pool: k.pool, Zone: "r/" + k.zone}]
		switch {
		case held[k.name]:
			out[k.name] = disruption.HeldMaintenance
		case allDown:
			out[k.name] = disruption.HeldHalted
		case frozen:
			out[k.name] = disruption.HeldFrozen
		case k.pool == "p" && w.paused:
			out[k.name] = disruption.HeldPaused
		case k.pool == "p" && pool.notReady > limit:
			out[k.name] = disruption.HeldBreaker
		case c != nil && c.notReady > 2 && float64(c.notReady)/float64(c.ready+c.notReady) >= 0.55:
			out[k.name] = disruption.HeldRate
		}
	}
	return out
}

// percent reads "50%" as 0.5.
func percent(s string) float64 {
	var v float64
	if _, err := fmt.Sscanf(s, "%g%%", &v); err != nil {
		return 0
	}
	return v / 100
}
