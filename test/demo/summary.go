package main

import (
	"fmt"
	"strings"
)

// printSummary prints what every act showed and how long it took, and how
// the cluster ended, as final shows it (nil when it could not be listed).
func (d *demo) printSummary(results []actResult, final *snapshot) {
	var b strings.Builder
	b.WriteString("\n=== Summary ===\n")
	total := 0
	for _, r := range results {
		status := "ok"
		if r.Err != nil {
			status = "FAILED"
		}
		fmt.Fprintf(&b, "(%s) %-20s %7s  %-6s  pods deleted: %d\n", r.Key, r.Title, secs(r.Took), status, r.Deleted)
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "      %s\n", n)
		}
		if r.Err != nil {
			fmt.Fprintf(&b, "      error: %v\n", r.Err)
		}
		total += r.Deleted
	}
	fmt.Fprintf(&b, "Pods deleted in total: %d of %d\n", total, len(d.fleet.Nodes())*podsPerNode)
	if final != nil && final.PodsTerminating > 0 {
		// A deleted pod leaves the API only once its node's kubelet has
		// stopped it: the simulated fleet has none to do that.
		fmt.Fprintf(&b, "Of the deleted pods, %d are still listed Terminating: no kubelet finished them.\n", final.PodsTerminating)
	}
	for _, r := range results {
		if r.Key == "e" && r.Err == nil {
			fmt.Fprintf(&b, "Act (e) confirmed: with every node silent, no node was tainted NoExecute and no pod was deleted (%d).\n", r.Deleted)
		}
	}
	if d.statusReport != "" {
		b.WriteString("\nDuring act (b), `node-lifecycle-controller status` said:\n\n")
		b.WriteString(d.statusReport)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Controller log: %s\n", d.logPath)
	fmt.Print(b.String())
}
