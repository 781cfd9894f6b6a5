package outside

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportersGetNoneOfTheDemosOrBenchsDependencies: the demo and the
// side-by-side benchmark are modules of their own (test/demo, test/bench),
// so that what they draw their charts and statistics with stays out of the
// module graph of every module that imports the controllers, the reporter
// or the envtest helper, as this one does.
func TestImportersGetNoneOfTheDemosOrBenchsDependencies(t *testing.T) {
	const library = "github.com/nodelifecycle/node-lifecycle-controller"
	root := append(requires(t, "../../go.mod"), library)
	var theirs []string
	for _, m := range []string{"../bench/go.mod", "../demo/go.mod"} {
		for _, r := range requires(t, m) {
			if !slices.Contains(root, r) && !slices.Contains(theirs, r) {
				theirs = append(theirs, r)
			}
		}
	}
	// The check can fail: the bench draws its charts with gonum's plot.
	if !slices.Contains(theirs, "gonum.org/v1/plot") {
		t.Fatalf("Modules the demo and the bench require and the library does not: %q, want gonum.org/v1/plot among them", theirs)
	}
	graph, err := exec.CommandContext(t.Context(), "go", "mod", "graph").Output()
	if err != nil {
		t.Fatalf("go mod graph: %v", err)
	}
	for line := range strings.Lines(string(graph)) {
		for _, m := range theirs {
			if strings.Contains(line, " "+m+"@") {
				t.Errorf("This importer's module graph reaches %s, a module of the demo or the bench: %s", m, strings.TrimSpace(line))
			}
		}
	}
}

// requires returns the paths of the modules that the go.mod at path
// requires, directly or not.
func requires(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var mod struct{ Require []struct{ Path string } }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("decode go mod edit -json %s: %v", path, err)
	}
	paths := make([]string, 0, len(mod.Require))
	for _, r := range mod.Require {
		paths = append(paths, r.Path)
	}
	return paths
}
