package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// WriteText writes the report for a person: the cluster-wide holds, a table
// of zones, then each unhealthy node with its pods.
func WriteText(w io.Writer, r Report) error {
	var b strings.Builder
	now := r.GeneratedAt
	if r.PartitionFreeze != nil {
		fmt.Fprintf(&b, "PARTITION FREEZE since %s (%s ago): every node is held: no NoExecute taint, no pod marked NotReady or evicted\n",
			clock(*r.PartitionFreeze), ago(now.Sub(*r.PartitionFreeze)))
	}
	if r.AllZonesDown {
		b.WriteString("EVERY ZONE IS FULLY DISRUPTED: no NoExecute taint is added and no pod is evicted\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	// A tabwriter over a strings.Builder cannot fail to write.
	_, _ = fmt.Fprintln(tw, "ZONE\tPOOL\tSTATE\tREADY\tNOT READY")
	for _, z := range r.Zones {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", z.Name, orDash(z.Pool), z.State, z.Ready, z.NotReady)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Unhealthy) == 0 {
		b.WriteString("\nEvery node is Ready and carries no node lifecycle taint.\n")
	}
	for _, n := range r.Unhealthy {
		writeNode(&b, n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeNode(b *strings.Builder, n Node) {
	fmt.Fprintf(b, "\nNode %s (zone %s", n.Name, n.Zone)
	if n.Pool != "" {
		fmt.Fprintf(b, ", NodeHealthPolicy %s", n.Pool)
	}
	b.WriteString(")\n")
	why := n.Reason
	if n.Message != "" {
		why += ": " + n.Message
	}
	fmt.Fprintf(b, "  Verdict:    %s", n.Verdict)
	if why != "" {
		fmt.Fprintf(b, " (%s)", why)
	}
	if n.Since != nil {
		fmt.Fprintf(b, " since %s", clock(*n.Since))
	}
	b.WriteString("\n")
	if n.HeartbeatAge != nil {
		fmt.Fprintf(b, "  Heartbeat:  %s ago, at %s by the node's clock\n", ago(time.Duration(*n.HeartbeatAge)), clock(*n.LastHeartbeat))
	} else {
		b.WriteString("  Heartbeat:  never\n")
	}
	var taints []string
	for _, t := range n.Taints {
		s := t.Key + ":" + t.Effect
		if t.TimeAdded != nil {
			s += " (added " + clock(*t.TimeAdded) + ")"
		}
		taints = append(taints, s)
	}
	fmt.Fprintf(b, "  Taints:     %s\n", orDash(strings.Join(taints, ", ")))
	if n.Held != "" {
		fmt.Fprintf(b, "  Held:       %s\n", n.Held)
	}
	if n.Maintenance != nil {
		fmt.Fprintf(b, "  Maintenance: %s\n", maintenanceText(*n.Maintenance))
	}
	if len(n.Pods) == 0 {
		b.WriteString("  Pods:       none\n")
		return
	}
	b.WriteString("  Pods:\n")
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "    NAMESPACE\tNAME\tEVICTION\tDECIDED BY")
	for _, p := range n.Pods {
		_, _ = fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", p.Namespace, p.Name, evictionTime(p, n), decided(p))
	}
	_ = tw.Flush()
}

// eviction says when the pod goes.
func evictionTime(p Pod, n Node) string {
	var s string
	switch {
	case p.EvictAt == nil && p.DecidedBy == "NoNoExecuteTaint":
		s = "not tainted NoExecute yet"
	case p.EvictAt == nil:
		s = "never"
	case *p.TimeLeft <= 0:
		s = "due now (" + clock(*p.EvictAt) + ")"
	default:
		s = "in " + ago(time.Duration(*p.TimeLeft)) + " (" + clock(*p.EvictAt) + ")"
	}
	if n.Held != "" && p.EvictAt != nil {
		s += ", held: " + n.Held
	}
	return s
}

// maintenanceText says what the node's maintenance holds, and until when.
func maintenanceText(m Maintenance) string {
	s := m.Condition
	if m.Since != nil {
		s += " since " + clock(*m.Since)
	}
	switch {
	case m.Held && m.HeldUntil != nil:
		s += ", eviction held until " + clock(*m.HeldUntil)
	case m.Held:
		// The grace counts from the node ceasing to be Ready: a node
		// listed before that has never reported, or is Ready but still
		// carries a taint.
		s += ", eviction held; its grace has not begun"
	case m.HeldUntil != nil:
		s += ", hold ended at " + clock(*m.HeldUntil)
	}
	return s
}

func decided(p Pod) string {
	if p.Taint == "" {
		return p.DecidedBy
	}
	return p.DecidedBy + " (" + p.Taint + ")"
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05Z") }

// ago rounds a duration for reading.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + ago(-d)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
