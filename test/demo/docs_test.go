package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// flagsBlock is a text code block of flags alone, as getting-started.md
// shows the controller's flags in the demo.
var flagsBlock = regexp.MustCompile("(?m)^```text\n((?:--[^\n]*\n)+)```")

// TestDocsShowTheDemosFlags: getting-started.md shows the flags the demo
// runs the controller with on simulated nodes, and kubelet.md those it runs
// it with on hollow kubelets, but those that say where its kubeconfig and its
// secure port are.
func TestDocsShowTheDemosFlags(t *testing.T) {
	for _, tc := range []struct{ doc, kubelets string }{
		{"../../docs/getting-started.md", simulatedKubelets},
		{"../../docs/kubelet.md", hollowKubelets},
	} {
		t.Run(tc.kubelets, func(t *testing.T) {
			doc, err := os.ReadFile(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			m := flagsBlock.FindSubmatch(doc)
			if m == nil {
				t.Fatalf("%s has no text block of the flags the demo runs the controller with", tc.doc)
			}
			shown := strings.Fields(string(m[1]))

			port := harness.SecurePort{Addr: "127.0.0.1:10263"}
			where := port.Flags("/metrics")
			var run []string
			for _, f := range controllerFlags("kubeconfig", port, timingsFor(tc.kubelets)) {
				if !strings.HasPrefix(f, "--kubeconfig=") && !slices.Contains(where, f) {
					run = append(run, f)
				}
			}
			slices.Sort(shown)
			slices.Sort(run)
			if !slices.Equal(shown, run) {
				t.Errorf("%s shows the demo's controller flags\n%s\nthe demo runs it with\n%s", tc.doc, strings.Join(shown, " "), strings.Join(run, " "))
			}
		})
	}
}
