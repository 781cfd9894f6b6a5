package main

import (
	"slices"
	"strings"
	"time"
)

// stoppedNode is what happened to one node whose heartbeats were stopped.
// The delays are in seconds after its deadline: its last heartbeat plus the
// grace period; nil when it never happened.
type stoppedNode struct {
	Node          string    `json:"node"`
	Zone          string    `json:"zone"`
	StoppedAt     time.Time `json:"stoppedAt"`
	LastHeartbeat time.Time `json:"lastHeartbeat"`
	Deadline      time.Time `json:"deadline"`
	MarkDelay     *float64  `json:"markDelaySeconds"`
	// OwnMarkDelay is the mark's delay as the controller timed it, from
	// the deadline it computed to its write: MarkDelay less the watches'
	// delivery, to it and to the bench. Only our controller logs it.
	OwnMarkDelay *float64 `json:"ownMarkDelaySeconds,omitempty"`
	TaintDelay   *float64 `json:"taintDelaySeconds"`
	MarkToTaint  *float64 `json:"markToTaintSeconds"`
	// Pods counts the node's pods, and PodsNotReady those seen not Ready;
	// PodsDelay is when the last of them was, after the deadline: from
	// then on no Service sends the node's pods traffic. Nil while some
	// pod was never seen not Ready.
	Pods         int      `json:"pods"`
	PodsNotReady int      `json:"podsNotReady"`
	PodsDelay    *float64 `json:"podsDelaySeconds,omitempty"`
}

// collect turns what the observer recorded into per-node delays.
func (r *turn) collect(rec *recording, f nodeFleet) {
	r.FalsePositives = rec.falsePositives
	for name, at := range rec.stopped {
		n := stoppedNode{Node: name, Zone: f.Zone(name), StoppedAt: at}
		if hb, ok := rec.heartbeat[name]; ok {
			n.LastHeartbeat = hb
			n.Deadline = hb.Add(monitorGrace)
		}
		marked, isMarked := rec.marked[name]
		tainted, isTainted := rec.tainted[name]
		if isMarked {
			n.MarkDelay = seconds(marked.Sub(n.Deadline))
		}
		if isTainted && isMarked {
			n.TaintDelay = seconds(tainted.Sub(n.Deadline))
			n.MarkToTaint = seconds(tainted.Sub(marked))
		}
		for _, at := range rec.pods[name] {
			n.Pods++
			if !at.IsZero() {
				n.PodsNotReady++
			}
		}
		if last, all := rec.lastPodNotReady(name); all && !n.Deadline.IsZero() {
			n.PodsDelay = seconds(last.Sub(n.Deadline))
		}
		r.Stopped = append(r.Stopped, n)
	}
	r.LeaseLag = summarize(rec.leaseLag)
	slices.SortFunc(r.Stopped, func(a, b stoppedNode) int { return strings.Compare(a.Node, b.Node) })
}

// collectOwn adds to the stopped nodes the mark delays the controller logged
// by its own clock.
func (r *turn) collectOwn(log string) error {
	if !r.Judges {
		return nil
	}
	own, err := ownMarkDelays(log)
	if err != nil {
		return err
	}
	for i := range r.Stopped {
		if d, ok := own[r.Stopped[i].Node]; ok {
			r.Stopped[i].OwnMarkDelay = seconds(d)
		}
	}
	return nil
}
