package shadow

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the comparison a dry run's record holds, summed up.
type Report struct {
	// Record names the ConfigMap read, Updated when it was last written.
	Record  string    `json:"record"`
	Updated time.Time `json:"updated,omitzero"`
	Summary Summary   `json:"summary"`
	// Episodes are the nodes' episodes, oldest first, each with how the
	// two controllers differed.
	Episodes []EpisodeReport `json:"episodes"`
}

// EpisodeReport is an episode and its differences.
type EpisodeReport struct {
	Episode
	Differences []string `json:"differences"`
}

// Summary counts how the two controllers differed over every episode.
type Summary struct {
	Episodes int `json:"episodes"`
	// Marks by both, and how much earlier this controller marked (a
	// negative lead is later): the median and the extremes.
	MarkedBoth     int     `json:"markedBoth"`
	MarkedEarlier  int     `json:"markedEarlier"`
	MarkedLater    int     `json:"markedLater"`
	MarkLeadMedian float64 `json:"markLeadMedianSeconds"`
	MarkLeadMin    float64 `json:"markLeadMinSeconds"`
	MarkLeadMax    float64 `json:"markLeadMaxSeconds"`
	MarkedOursOnly int     `json:"markedOursOnly"`
	MarkedUpstream int     `json:"markedUpstreamOnly"`
	// NoExecute taints by both, by the other controller only (held here,
	// or not yet made here), and by this controller only.
	TaintedBoth         int            `json:"taintedBoth"`
	TaintedUpstreamHeld map[string]int `json:"taintedUpstreamHeld,omitempty"`
	TaintedUpstreamOnly int            `json:"taintedUpstreamOnly"`
	TaintedOursOnly     int            `json:"taintedOursOnly"`
	// Pods evicted by each, and those the other evicted while this one
	// held evictions back, by reason.
	EvictedUpstream int            `json:"evictedUpstream"`
	EvictedOurs     int            `json:"evictedOurs"`
	EvictionsHeld   map[string]int `json:"evictionsHeld,omitempty"`
}

// Compare builds the report of the stored record.
func Compare(record string, s Stored) Report {
	r := Report{Record: record, Updated: s.Updated, Episodes: []EpisodeReport{}}
	sum := &r.Summary
	var leads []float64
	for _, e := range s.Episodes {
		r.Episodes = append(r.Episodes, EpisodeReport{Episode: e, Differences: Differences(e)})
		sum.Episodes++
		o, u := e.Ours, e.Upstream
		switch {
		case o.Marked != nil && u.Marked != nil:
			sum.MarkedBoth++
			lead := u.Marked.Sub(*o.Marked).Seconds()
			leads = append(leads, lead)
			if lead > 0 {
				sum.MarkedEarlier++
			} else if lead < 0 {
				sum.MarkedLater++
			}
		case o.Marked != nil:
			sum.MarkedOursOnly++
		case u.Marked != nil:
			sum.MarkedUpstream++
		}
		switch {
		case o.NoExecute != "" && u.NoExecute != "":
			sum.TaintedBoth++
		case u.NoExecute != "" && e.NoExecuteHeld != "":
			sum.TaintedUpstreamHeld = addTo(sum.TaintedUpstreamHeld, e.NoExecuteHeld, 1)
		case u.NoExecute != "":
			sum.TaintedUpstreamOnly++
		case o.NoExecute != "":
			sum.TaintedOursOnly++
		}
		sum.EvictedUpstream += u.Evicted
		sum.EvictedOurs += o.Evicted
		if e.EvictionsHeld != "" && u.Evicted > o.Evicted {
			sum.EvictionsHeld = addTo(sum.EvictionsHeld, e.EvictionsHeld, u.Evicted-o.Evicted)
		}
	}
	if len(leads) > 0 {
		sort.Float64s(leads)
		sum.MarkLeadMin, sum.MarkLeadMax = leads[0], leads[len(leads)-1]
		sum.MarkLeadMedian = leads[len(leads)/2]
		if len(leads)%2 == 0 {
			sum.MarkLeadMedian = (leads[len(leads)/2-1] + leads[len(leads)/2]) / 2
		}
	}
	return r
}

func addTo(m map[string]int, k string, n int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k] += n
	return m
}

// Differences says, in words, how the two controllers differed in an
// episode: "ours" is the dry run, "upstream" the controller that decides.
func Differences(e Episode) []string {
	var out []string
	o, u := e.Ours, e.Upstream
	switch {
	case o.Marked != nil && u.Marked != nil:
		out = append(out, "marked "+relative(*o.Marked, *u.Marked))
	case o.Marked != nil:
		out = append(out, "ours marked at "+stamp(*o.Marked)+"; upstream did not")
	case u.Marked != nil:
		out = append(out, "upstream marked at "+stamp(*u.Marked)+"; ours did not")
	}
	switch {
	case o.NoExecute != "" && u.NoExecute != "":
		out = append(out, "tainted NoExecute "+relative(*o.NoExecuteAdded, *u.NoExecuteAdded))
	case u.NoExecute != "" && e.NoExecuteHeld != "":
		out = append(out, fmt.Sprintf("upstream tainted NoExecute (%s) at %s; ours held it: %s",
			short(u.NoExecute), stamp(*u.NoExecuteAdded), e.NoExecuteHeld))
	case u.NoExecute != "":
		out = append(out, fmt.Sprintf("upstream tainted NoExecute (%s) at %s; ours did not", short(u.NoExecute), stamp(*u.NoExecuteAdded)))
	case o.NoExecute != "":
		out = append(out, fmt.Sprintf("ours tainted NoExecute (%s) at %s; upstream did not", short(o.NoExecute), stamp(*o.NoExecuteAdded)))
	}
	switch {
	case u.Evicted > 0 && o.Evicted > 0:
		out = append(out, fmt.Sprintf("evicted %d pods, upstream %d; first eviction %s", o.Evicted, u.Evicted,
			relative(*o.FirstEviction, *u.FirstEviction)))
	case u.Evicted > 0 && e.EvictionsHeld != "":
		out = append(out, fmt.Sprintf("upstream evicted %d pods from %s; ours held them: %s", u.Evicted,
			stamp(*u.FirstEviction), e.EvictionsHeld))
	case u.Evicted > 0 && e.EvictionsDue != nil:
		out = append(out, fmt.Sprintf("upstream evicted %d pods from %s; ours would have from %s%s",
			u.Evicted, stamp(*u.FirstEviction), stamp(*e.EvictionsDue), after(*e.EvictionsDue, *u.FirstEviction)))
	case u.Evicted > 0:
		out = append(out, fmt.Sprintf("upstream evicted %d pods from %s; ours had not", u.Evicted, stamp(*u.FirstEviction)))
	case o.Evicted > 0:
		out = append(out, fmt.Sprintf("ours evicted %d pods from %s; upstream had not", o.Evicted, stamp(*o.FirstEviction)))
	}
	return out
}

// relative says when ours did something against when upstream did it.
func relative(ours, upstream time.Time) string {
	d := upstream.Sub(ours).Round(time.Millisecond)
	switch {
	case d > 0:
		return fmt.Sprintf("%v earlier than upstream (ours %s, upstream %s)", d, stamp(ours), stamp(upstream))
	case d < 0:
		return fmt.Sprintf("%v later than upstream (ours %s, upstream %s)", -d, stamp(ours), stamp(upstream))
	default:
		return "at the same time as upstream (" + stamp(ours) + ")"
	}
}

// after says how long after upstream ours would have acted, "" if not after.
func after(ours, upstream time.Time) string {
	if d := ours.Sub(upstream).Round(time.Millisecond); d > 0 {
		return fmt.Sprintf(", %v after upstream", d)
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000Z") }

// short drops the node.kubernetes.io/ prefix of a taint key.
func short(key string) string { return strings.TrimPrefix(key, "node.kubernetes.io/") }

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteText writes the report for a terminal: the summary, then one line
// per episode.
func WriteText(w io.Writer, r Report) error {
	var b strings.Builder
	s := r.Summary
	updated := "never written"
	if !r.Updated.IsZero() {
		updated = "written " + r.Updated.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "Dry run record %s (%s): %d episodes\n", r.Record, updated, s.Episodes)
	fmt.Fprintf(&b, "Marks:      %d by both", s.MarkedBoth)
	if s.MarkedBoth > 0 {
		fmt.Fprintf(&b, " (ours earlier on %d, later on %d; ours ahead by %s median, %s to %s)", s.MarkedEarlier, s.MarkedLater,
			seconds(s.MarkLeadMedian), seconds(s.MarkLeadMin), seconds(s.MarkLeadMax))
	}
	fmt.Fprintf(&b, "; %d by ours only; %d by upstream only\n", s.MarkedOursOnly, s.MarkedUpstream)
	fmt.Fprintf(&b, "NoExecute:  %d by both; %d by ours only; %d by upstream only", s.TaintedBoth, s.TaintedOursOnly, s.TaintedUpstreamOnly)
	if len(s.TaintedUpstreamHeld) > 0 {
		fmt.Fprintf(&b, "; held by ours where upstream tainted: %s", counts(s.TaintedUpstreamHeld))
	}
	fmt.Fprintf(&b, "\nEvictions:  ours %d, upstream %d", s.EvictedOurs, s.EvictedUpstream)
	if len(s.EvictionsHeld) > 0 {
		fmt.Fprintf(&b, "; held by ours where upstream evicted: %s", counts(s.EvictionsHeld))
	}
	b.WriteString("\n")
	if len(r.Episodes) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "NODE\tSTARTED\tENDED\tDIFFERENCES")
		for _, e := range r.Episodes {
			ended := "-"
			if e.Ended != nil {
				ended = stamp(*e.Ended)
			}
			started := "-"
			if t := e.start(); !t.IsZero() {
				started = stamp(t)
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Node, started, ended, strings.Join(e.Differences, "; "))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func seconds(s float64) string { return fmt.Sprintf("%.3fs", s) }

// counts writes "reason: n" pairs, most first.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
