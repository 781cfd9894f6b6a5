package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ANSI sequences for the live view.
const (
	clearScreen = "\033[H\033[2J"
	bold        = "\033[1m"
	green       = "\033[32m"
	yellow      = "\033[33m"
	red         = "\033[31m"
	reset       = "\033[0m"
)

// maxTrouble is how many nodes in trouble the view lists by name.
const maxTrouble = 10

// runView samples the cluster every viewInterval for the timeline and, on a
// terminal, redraws the live view; elsewhere it prints a status line every
// few seconds. It returns when ctx ends.
func (d *demo) runView(ctx context.Context, tty bool) {
	tick := time.NewTicker(viewInterval)
	defer tick.Stop()
	for n := 0; ; n++ {
		s, err := d.obs.observe(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			fmt.Fprintf(os.Stderr, "demo: view: %v\n", err)
		default:
			d.timeline.record(s)
			if tty {
				fmt.Print(d.render(s))
			} else if n%10 == 0 {
				fmt.Println(d.statusLine(s))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// statusLine sums a snapshot up in one line, for output that is not a terminal.
func (d *demo) statusLine(s *snapshot) string {
	ready, tainted := 0, 0
	for i := range s.Nodes {
		if isReady(&s.Nodes[i]) {
			ready++
		}
		if s.Nodes[i].noExecute() != nil {
			tainted++
		}
	}
	line := fmt.Sprintf("  [%6s] Ready %d/%d, NoExecute %d, pods alive %d, deleted %d (%d Terminating)",
		secs(s.At.Sub(d.start)), ready, len(s.Nodes), tainted, s.PodsAlive, s.PodsDeleted, s.PodsTerminating)
	if held := s.held(); held != "" {
		line += "; held: " + held
	}
	return line
}

// render draws one frame of the live view.
func (d *demo) render(s *snapshot) string {
	d.mu.Lock()
	caption, done := d.caption, append([]actResult(nil), d.done...)
	d.mu.Unlock()

	var b strings.Builder
	b.WriteString(clearScreen)
	fmt.Fprintf(&b, "%snode-lifecycle-controller demo%s  +%s   controller log: %s\n", bold, reset, secs(s.At.Sub(d.start)), d.logPath)
	fmt.Fprintf(&b, "%s%s%s\n\n", bold, caption, reset)

	fmt.Fprintf(&b, "%-14s %6s %10s  %s\n", "ZONE", "READY", "NOT READY", "STATE")
	for _, z := range s.zones() {
		fmt.Fprintf(&b, "%-14s %6d %10d  %s\n", z.Name, z.Ready, z.NotReady, colorZone(z.State))
	}
	held := s.held()
	frozen := held != ""
	if frozen {
		fmt.Fprintf(&b, "%sNo NoExecute taint, no eviction: %s%s\n", yellow, held, reset)
	} else {
		b.WriteString("\n")
	}

	var trouble []*nodeState
	for i := range s.Nodes {
		if !isReady(&s.Nodes[i]) || s.Nodes[i].noExecute() != nil {
			trouble = append(trouble, &s.Nodes[i])
		}
	}
	// Nodes whose pods are counting down first, soonest first.
	slices.SortStableFunc(trouble, func(a, b *nodeState) int { return cmp.Compare(evictionOrder(a), evictionOrder(b)) })
	fmt.Fprintf(&b, "\nNodes in trouble: %d\n", len(trouble))
	if len(trouble) > 0 {
		fmt.Fprintf(&b, "  %-11s %-8s %-22s %9s  %-44s %s\n", "NODE", "READY", "REASON", "HEARTBEAT", "TAINTS", "EVICTION")
	}
	for i, n := range trouble {
		if i == maxTrouble {
			fmt.Fprintf(&b, "  +%d more\n", len(trouble)-maxTrouble)
			break
		}
		fmt.Fprintf(&b, "  %-11s %-8s %-22s %9s  %-44s %s\n",
			n.Name, n.Ready, n.Reason, heartbeatAge(n, s.At), taintList(n), countdown(n, s.At, frozen, d.timings.toleration()))
	}

	fmt.Fprintf(&b, "\nPods: %s%d alive%s, %s%d deleted%s (%d of them still Terminating: listed until a kubelet finishes them)\n",
		green, s.PodsAlive, reset, red, s.PodsDeleted, reset, s.PodsTerminating)
	if len(done) > 0 {
		b.WriteString("\nDone:\n")
		for _, r := range done {
			fmt.Fprintf(&b, "  (%s) %-20s %7s  %s\n", r.Key, r.Title, secs(r.Took), outcome(r))
		}
	}
	return b.String()
}

// evictionOrder sorts nodes with live pods on a NoExecute taint first, by
// the taint's age, then the rest.
func evictionOrder(n *nodeState) int64 {
	t := n.noExecute()
	if t == nil || n.PodsAlive == 0 {
		return math.MaxInt64
	}
	if t.TimeAdded == nil {
		return math.MaxInt64 - 1
	}
	return t.TimeAdded.Unix()
}

func colorZone(state string) string {
	switch state {
	case "":
		return "-"
	case "FullDisruption":
		return red + state + reset
	case "PartialDisruption":
		return yellow + state + reset
	default:
		return green + state + reset
	}
}

func heartbeatAge(n *nodeState, now time.Time) string {
	if n.RenewTime.IsZero() {
		return "-"
	}
	return secs(now.Sub(n.RenewTime).Round(100 * time.Millisecond))
}

func taintList(n *nodeState) string {
	if len(n.Taints) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(n.Taints))
	for _, t := range n.Taints {
		parts = append(parts, strings.TrimPrefix(t.Key, "node.kubernetes.io/")+":"+string(t.Effect))
	}
	return strings.Join(parts, ",")
}

// countdown tells when the node's pods will be evicted: toleration after
// the NoExecute taint was added, unless the cluster holds evictions.
func countdown(n *nodeState, now time.Time, frozen bool, toleration time.Duration) string {
	t := n.noExecute()
	switch {
	case n.PodsAlive == 0 && n.PodsDeleted > 0:
		return "pods deleted"
	case t == nil && frozen && n.Ready != corev1.ConditionTrue:
		return "frozen"
	case t == nil:
		return "-"
	case frozen:
		return "held"
	case t.TimeAdded == nil:
		return "pending"
	}
	left := t.TimeAdded.Add(toleration).Sub(now)
	if left <= 0 {
		return "due"
	}
	return "in " + secs(left)
}

func outcome(r actResult) string {
	if r.Err != nil {
		return red + "FAILED: " + r.Err.Error() + reset
	}
	return fmt.Sprintf("ok, %d pods deleted", r.Deleted)
}
