package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// flagsOfOthers are flags the docs name that are another command's.
var flagsOfOthers = map[string]string{
	"--create-namespace": "helm install's",
}

// patternExamples name a flag of each pattern the docs name that --help
// lists no flag of: kube-controller-manager's, which the binary accepts
// without effect, and the --zap-* flags, which it no longer accepts.
var patternExamples = map[string]string{
	"--concurrent-*":                "--concurrent-deployment-syncs",
	"--cluster-signing-*":           "--cluster-signing-cert-file",
	"--horizontal-pod-autoscaler-*": "--horizontal-pod-autoscaler-sync-period",
	"--zap-*":                       "--zap-log-level",
}

// gone are the flags the docs say the binary no longer accepts.
var gone = []string{"--zap-*"}

// helpFlag finds the long name of each flag in a --help.
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?(--[a-z0-9-]+)`)

// checkFlags checks that every flag the docs name in their text is one the
// binary `make build` wrote takes: one that its --help, or its status
// subcommand's, lists, or else one that it accepts, not refusing it as
// unknown; or that it refuses it, for those the docs say are gone.
func checkFlags(t *testing.T, w *workspace, named []string) {
	var help []string
	for _, cmd := range []string{"bin/node-lifecycle-controller --help", "bin/node-lifecycle-controller status --help"} {
		r := w.mustShell(t, "", cmd)
		for _, m := range helpFlag.FindAllStringSubmatch(r.stdout+r.stderr, -1) {
			help = append(help, m[1])
		}
	}
	if len(help) < 50 {
		t.Fatalf("Found %d flags in the binary's --help; the pattern no longer reads it", len(help))
	}
	slices.Sort(named)
	named = slices.Compact(named)
	for _, f := range named {
		prefix, pattern := strings.CutSuffix(f, "*")
		listed := slices.ContainsFunc(help, func(h string) bool { return h == f || pattern && strings.HasPrefix(h, prefix) })
		if _, ok := flagsOfOthers[f]; ok || listed && !slices.Contains(gone, f) {
			continue
		}
		probe := f
		if pattern {
			example, ok := patternExamples[f]
			if !ok {
				t.Errorf("The docs name %s, of which --help lists no flag: add a flag of it to patternExamples", f)
				continue
			}
			probe = example
		}
		// An empty value: a flag that wants another is refused for it,
		// not as unknown; --version exits before anything starts.
		r := w.shell(t, "", "bin/node-lifecycle-controller "+probe+"= --version")
		unknown := strings.Contains(r.stderr, "unknown flag: "+probe)
		switch {
		case slices.Contains(gone, f) && !unknown:
			t.Errorf("The docs say %s is gone, and the binary takes %s:\n%s", f, probe, r)
		case !slices.Contains(gone, f) && unknown:
			t.Errorf("The docs name %s, which the binary does not know:\n%s", f, r)
		}
	}
	for f := range flagsOfOthers {
		if !slices.Contains(named, f) {
			t.Errorf("flagsOfOthers lists %s, which the docs no longer name", f)
		}
	}
	for f := range patternExamples {
		if !slices.Contains(named, f) {
			t.Errorf("patternExamples lists %s, which the docs no longer name", f)
		}
	}
}
