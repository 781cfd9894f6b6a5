package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"time"
)

// markLine matches the line our controller logs for each mark, in klog's
// text format or as JSON: the node, and the delay from its deadline to the
// write, by the controller's own clock.
var markLine = regexp.MustCompile(`"Marked node unreachable".*?"?\bNode"?[=:]"([^"]+)".*?"?\bdelay"?[=:]"?([0-9.]+[a-zµ]*s|[0-9.e+-]+)"?`)

// ownMarkDelays reads, from a controller's log, the delay of each mark from
// the node's deadline to the write, as the controller timed it: the bench's
// end-to-end figure less the watch's delivery to either side. Only our
// controller logs it. A node marked more than once keeps its first mark.
func ownMarkDelays(path string) (map[string]time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the marks in %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]time.Duration{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := markLine.FindSubmatch(sc.Bytes())
		if m == nil {
			continue
		}
		node := string(m[1])
		if _, seen := out[node]; seen {
			continue
		}
		d, err := parseDelay(string(m[2]))
		if err != nil {
			return nil, fmt.Errorf("%s: mark of %s: %w", path, node, err)
		}
		out[node] = d
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the marks in %s: %w", path, err)
	}
	return out, nil
}

// parseDelay reads a delay as klog's text format writes a duration
// ("11.2ms"), or as its JSON format does (nanoseconds).
func parseDelay(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	var ns float64
	if _, err := fmt.Sscanf(s, "%g", &ns); err != nil {
		return 0, fmt.Errorf("delay %q: %w", s, err)
	}
	return time.Duration(ns), nil
}
