package deploy

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/pflag"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
)

// kubeControllerManager is the one of the control plane the tests run
// against: in KUBEBUILDER_ASSETS, which make test sets, else the one `make
// envtest-assets` builds into bin/ from the Kubernetes release the
// test/tools module pins.
var kubeControllerManager = filepath.Join(cmp.Or(os.Getenv("KUBEBUILDER_ASSETS"), filepath.Join(repoRoot, "bin")), "kube-controller-manager")

// flagName finds the long name of each flag in a --help.
var flagName = regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z0-9-]+)`)

// TestEveryKubeControllerManagerFlagIsKnown: every flag of
// kube-controller-manager's --help is one of this binary's, or one it
// accepts without effect (and says why), so that an upstream command line
// never fails on an unknown flag.
func TestEveryKubeControllerManagerFlagIsKnown(t *testing.T) {
	if _, err := os.Stat(kubeControllerManager); err != nil {
		t.Fatalf("No kube-controller-manager to read the flags of: run `make envtest-assets` (`make test` does): %v", err)
	}
	help, err := exec.CommandContext(t.Context(), kubeControllerManager, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-controller-manager --help: %v\n%s", err, help)
	}
	names := flagName.FindAllStringSubmatch(string(help), -1)
	if len(names) < 100 {
		t.Fatalf("Found %d flags in kube-controller-manager --help; the pattern no longer reads it:\n%s", len(names), help)
	}
	o := cmdline.Default()
	fs := pflag.NewFlagSet("node-lifecycle-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	upstream := map[string]bool{}
	for _, m := range names {
		upstream[m[1]] = true
		if fs.Lookup(m[1]) == nil && m[1] != "help" {
			t.Errorf("kube-controller-manager's --%s is unknown here: add it to the flags accepted without effect, with why, or act on it", m[1])
		}
	}
	// The flags reference says which of this binary's own flags are
	// kube-controller-manager's too.
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		if shared := cmdline.SharedWithKubeControllerManager(f.Name); shared != upstream[f.Name] {
			t.Errorf("--%s: the flags reference says kube-controller-manager has it: %v; its --help: %v", f.Name, shared, upstream[f.Name])
		}
	})
}
