package markdown

import "testing"

func TestSlugIsGitHubs(t *testing.T) {
	for title, want := range map[string]string{
		"Faults tried, and what held":                            "faults-tried-and-what-held",
		"Trying it beside the built-in controller: `--dry-run`":  "trying-it-beside-the-built-in-controller---dry-run",
		"Pod eviction (in place of `taint-eviction-controller`)": "pod-eviction-in-place-of-taint-eviction-controller",
		"Why is this node NotReady, and when will my pods go?":   "why-is-this-node-notready-and-when-will-my-pods-go",
		"NodeLifecycleNoLeader":                                  "nodelifecyclenoleader",
		"The secure port: probes and metrics":                    "the-secure-port-probes-and-metrics",
		"`node_lifecycle_healthcheck` is 0":                      "node_lifecycle_healthcheck-is-0",
	} {
		if got := Slug(title); got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
	}
}
