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
var markLine = regexp.MustCompile(`"Marked node unreachable".*?"?\bNode"?[=:]"([^"]+)".*?"?\bdelay"?[=:]"?` + durationValue)

// durationValue is a duration as klog's text format writes it ("11.2ms"),
// or as its JSON format does (nanoseconds).
const durationValue = `([0-9.]+[a-zµ]*s|[0-9.e+-]+)"?`

// markStages are the stages the controller splits a mark's delay into on
// the same line, in their order: the deadline to the node handed to the
// work queue, the wait for a worker, the look, the live read and the
// mark's patch. A mark no deadline wake started has only the last two.
var markStages = []string{"wake", "queue", "look", "read", "patch"}

// stageValue matches each stage's value on a mark's line.
var stageValue = func() map[string]*regexp.Regexp {
	out := map[string]*regexp.Regexp{}
	for _, name := range markStages {
		out[name] = regexp.MustCompile(`"?\b` + name + `"?[=:]"?` + durationValue)
	}
	return out
}()

// ownMark is a mark as the controller timed it: its delay from the node's
// deadline to the write, and the stages of that delay the line gives.
type ownMark struct {
	delay  time.Duration
	stages map[string]time.Duration
}

// ownMarks reads, from a controller's log, each mark as the controller timed
// it: its delay is the bench's end-to-end figure less the watch's delivery
// to either side. Only our controller logs it. A node marked more than once
// keeps its first mark.
func ownMarks(path string) (map[string]ownMark, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the marks in %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]ownMark{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		at := markLine.FindSubmatchIndex(line)
		if at == nil {
			continue
		}
		node := string(line[at[2]:at[3]])
		if _, seen := out[node]; seen {
			continue
		}
		mark := ownMark{stages: map[string]time.Duration{}}
		if mark.delay, err = parseDelay(string(line[at[4]:at[5]])); err != nil {
			return nil, fmt.Errorf("%s: mark of %s: %w", path, node, err)
		}
		// The stages follow the delay.
		for name, re := range stageValue {
			v := re.FindSubmatch(line[at[1]:])
			if v == nil {
				continue
			}
			if mark.stages[name], err = parseDelay(string(v[1])); err != nil {
				return nil, fmt.Errorf("%s: mark of %s, %s: %w", path, node, name, err)
			}
		}
		out[node] = mark
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
