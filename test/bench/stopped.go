package main

import (
	"fmt"
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
	// OwnMarkStages splits OwnMarkDelay into its stages, in seconds, by
	// name (markStages).
	OwnMarkStages map[string]float64 `json:"ownMarkStagesSeconds,omitempty"`
	TaintDelay    *float64           `json:"taintDelaySeconds"`
	MarkToTaint   *float64           `json:"markToTaintSeconds"`
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
// by its own clock, and their stages.
func (r *turn) collectOwn(log string) error {
	if !r.Judges {
		return nil
	}
	own, err := ownMarks(log)
	if err != nil {
		return err
	}
	for i := range r.Stopped {
		m, ok := own[r.Stopped[i].Node]
		if !ok {
			continue
		}
		r.Stopped[i].OwnMarkDelay = seconds(m.delay)
		for name, d := range m.stages {
			if r.Stopped[i].OwnMarkStages == nil {
				r.Stopped[i].OwnMarkStages = map[string]float64{}
			}
			r.Stopped[i].OwnMarkStages[name] = d.Seconds()
		}
	}
	return nil
}

// markStagesSummary says, for a run's line in results.md, the median and
// the greatest of each stage of the marks over the stopped nodes, "" when
// the controller logged none.
func (r *turn) markStagesSummary() string {
	var parts []string
	for _, name := range markStages {
		var v []float64
		for _, n := range r.Stopped {
			if d, ok := n.OwnMarkStages[name]; ok {
				v = append(v, d)
			}
		}
		if len(v) == 0 {
			continue
		}
		s := summarize(v)
		parts = append(parts, fmt.Sprintf("%s %.2f / %.2fms", name, 1000*s.P50, 1000*s.Max))
	}
	if len(parts) == 0 {
		return ""
	}
	return "mark stages by its own clock, median / max: " + strings.Join(parts, ", ")
}
