package docs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = "../.."

// commandTimeout bounds each command the docs show; `make build` on a cold
// build cache is the slowest.
const commandTimeout = 5 * time.Minute

// workspace is where the docs' commands run. Its directory stands for the
// repository's root: it holds copies of what the commands read there (the
// Makefile, config/, the chart), and bin/, into which `make build` and `make
// image` write, beside links to the kustomize and helm the Makefile pins. It
// is also their HOME, so that ~/.kube/config is the kubeconfig of an admin
// of a local control plane, and nothing reaches a cluster of the machine's
// user.
type workspace struct {
	// root is the test that outlives every command: what one command
	// starts and a later one uses (the control plane, the scenario) is
	// stopped when it ends.
	root *testing.T
	// repo is the repository's root, and dir the workspace's.
	repo, dir string

	env      *envtest.Environment
	started  chan struct{} // closed once the control plane started, or failed to
	cfg      *rest.Config  // the admin's; read after started
	startErr error         // read after started
	client   client.Client

	// goEnv is where this process's go keeps its modules, its build cache
	// and its settings, which a go that make runs must share: they are
	// found from HOME, which the commands have of their own.
	goEnv []string

	// demoFlags are the flags getting-started.md says `make demo` runs the
	// controller with.
	demoFlags []string
	scenario  *scenario
}

// newWorkspace prepares the workspace and starts the control plane, which
// the first command that needs it waits for.
func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	repo, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	w := &workspace{root: t, repo: repo, dir: t.TempDir(), started: make(chan struct{})}
	// The clients of the fleet and the test log nothing worth reading: what
	// went wrong is in the commands' output and the controller's log.
	logf.SetLogger(logr.Discard())
	for _, tool := range []struct{ name, target string }{
		{"kustomize", "make kustomize"}, {"helm", "make helm"}, {"ociimage", "make ociimage"},
	} {
		if _, err := os.Stat(filepath.Join(repo, "bin", tool.name)); err != nil {
			t.Fatalf("No bin/%s to run the docs' commands with: run `%s` (`make test` does): %v", tool.name, tool.target, err)
		}
	}
	for _, d := range []string{"bin", "dist", ".kube"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// go.mod and go.sum, for the Makefile's `go list -m` of the Ginkgo
	// version, which it reads whatever the target.
	for _, f := range []string{"Makefile", "go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"config", filepath.Join("dist", "chart")} {
		if err := os.CopyFS(filepath.Join(w.dir, d), os.DirFS(filepath.Join(repo, d))); err != nil {
			t.Fatalf("copy %s: %v", d, err)
		}
	}
	for _, tool := range []string{"kustomize", "helm"} {
		if err := os.Symlink(filepath.Join(repo, "bin", tool), filepath.Join(w.dir, "bin", tool)); err != nil {
			t.Fatal(err)
		}
	}

	out, err := exec.CommandContext(t.Context(), "go", "env", "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	values := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(values) != 4 {
		t.Fatalf("go env printed %q, want four values", out)
	}
	for i, name := range []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOENV"} {
		w.goEnv = append(w.goEnv, name+"="+values[i])
	}

	assets, err := testenv.AssetsDir("make test")
	if err != nil {
		t.Fatal(err)
	}
	w.env = harness.NewEnvironment(assets)
	w.env.CRDDirectoryPaths = []string{filepath.Join(repo, "config", "crd", "bases")}
	go func() {
		defer close(w.started)
		w.cfg, w.startErr = harness.StartControlPlane(w.env)
	}()
	t.Cleanup(func() {
		<-w.started
		if w.startErr == nil {
			if err := w.env.Stop(); err != nil {
				t.Errorf("stop control plane: %v", err)
			}
		}
	})
	return w
}

// controlPlane waits for the control plane, and the first time writes
// ~/.kube/config for its admin.
func (w *workspace) controlPlane(t *testing.T) client.Client {
	t.Helper()
	<-w.started
	if w.startErr != nil {
		t.Fatal(w.startErr)
	}
	if w.client != nil {
		return w.client
	}
	path := filepath.Join(w.dir, ".kube", "config")
	if err := harness.WriteKubeconfig(w.env, "docs", path); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(w.cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.client = c
	return c
}

// environ is the environment of the docs' commands: this process's, with
// HOME and the kubeconfig the workspace's, the workspace's bin/ first in
// PATH (so that `helm` is the pinned one), the C locale (so that sort sorts
// as the docs show), helm's files under HOME, go's where they were, git
// taking no lock it can do without, no make of this process's own to talk
// to, and none of the variables make test hands its tests: IMAGE_ARCHIVE
// would send `make image` to write the repository's archive, which
// test/image reads meanwhile, instead of the workspace's.
func (w *workspace) environ() []string {
	set := map[string]string{
		"HOME":       w.dir,
		"KUBECONFIG": filepath.Join(w.dir, ".kube", "config"),
		"PATH":       filepath.Join(w.dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"LC_ALL":     "C",
		// The Makefile's git describe --dirty refreshes the index, and so
		// would take its lock from under whoever commits meanwhile.
		"GIT_OPTIONAL_LOCKS": "0",
		"HELM_CONFIG_HOME":   filepath.Join(w.dir, ".config", "helm"),
		"HELM_CACHE_HOME":    filepath.Join(w.dir, ".cache", "helm"),
		"HELM_DATA_HOME":     filepath.Join(w.dir, ".local", "share", "helm"),
	}
	drop := []string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GNUMAKEFLAGS", "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV", "IMAGE_ARCHIVE"}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok && !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return append(env, w.goEnv...)
}

// result is what a command printed, and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// shell runs script with bash in dir, the workspace's when empty, as a
// reader types it into a terminal.
func (w *workspace) shell(t *testing.T, dir, script string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = cmp.Or(dir, w.dir)
	cmd.Env = w.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %q: %v", script, err)
	}
	return r
}

// mustShell is shell, failing t unless the command succeeds.
func (w *workspace) mustShell(t *testing.T, dir, script string) result {
	t.Helper()
	r := w.shell(t, dir, script)
	if r.code != 0 {
		t.Fatalf("%s\n%s", script, r)
	}
	return r
}
