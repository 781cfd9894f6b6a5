package kubebuilder

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = "../.."

// kubebuilderCLI is the binary `make kubebuilder` builds, at the version the
// Makefile pins.
var kubebuilderCLI = filepath.Join(repoRoot, "bin", "kubebuilder")

func TestEditReadsPROJECTAndWritesItBack(t *testing.T) {
	dir := copyTree(t)
	want := readProject(t, dir)
	before := snapshot(t, dir)

	// kubebuilder acts on the PROJECT it read: the flag lands in it, and
	// every other field stays as it was.
	mustRun(t, dir, "edit", "--multigroup")
	got := readProject(t, dir)
	wantMultigroup := parse(t, want)
	wantMultigroup["multigroup"] = true
	if gotFields := parse(t, got); !reflect.DeepEqual(gotFields, wantMultigroup) {
		t.Errorf("After kubebuilder edit --multigroup, PROJECT is\n%s\nwant the committed one with multigroup: true, as\n%s", got, mustMarshal(t, wantMultigroup))
	}

	// Back to a single group, kubebuilder writes the committed PROJECT byte
	// for byte, but the comments: it knows every field, and the file is in
	// the form kubebuilder writes.
	mustRun(t, dir, "edit", "--multigroup=false")
	if got := readProject(t, dir); got != want {
		t.Errorf("After kubebuilder edit --multigroup=false, PROJECT (comments aside) is\n%s\nwant it as committed:\n%s", got, want)
	}

	after := snapshot(t, dir)
	delete(before, "PROJECT")
	delete(after, "PROJECT")
	checkSameFiles(t, "kubebuilder edit", before, after)
}

func TestPROJECTNamesEachControllerAndWhatItReconciles(t *testing.T) {
	// Each controller by the name it has in controller-runtime, and the
	// kind of the objects it reconciles (its For, or its requests').
	want := map[string][]string{
		"NodeHealthPolicy": {nodehealthpolicy.ControllerName},
		"Node":             {nodehealth.ControllerName, podeviction.ControllerName},
	}
	var project struct {
		Resources []struct {
			Kind        string `json:"kind"`
			Controllers []struct {
				Name string `json:"name"`
			} `json:"controllers"`
		} `json:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &project); err != nil {
		t.Fatalf("Parse PROJECT: %v", err)
	}
	got := map[string][]string{}
	for _, r := range project.Resources {
		for _, c := range r.Controllers {
			got[r.Kind] = append(got[r.Kind], c.Name)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PROJECT records the controllers %v by kind, want %v", got, want)
	}
}

func TestSetupEnvtestIsOfControllerRuntimesMinor(t *testing.T) {
	// setup-envtest is tagged apart from controller-runtime, so the Makefile
	// cannot take its version from go.mod as kubebuilder's scaffold does;
	// its minor must still be that of the controller-runtime in go.mod.
	pinned := match(t, "Makefile", `(?m)^ENVTEST_VERSION \?= (v\d+\.\d+)\.\d+$`)
	required := match(t, "go.mod", `(?m)^\s*sigs\.k8s\.io/controller-runtime (v\d+\.\d+)\.\d+`)
	if pinned != required {
		t.Errorf("The Makefile builds setup-envtest %s.x, for the controller-runtime %s.x go.mod requires: set ENVTEST_VERSION to the newest tag of sigs.k8s.io/controller-runtime/tools/setup-envtest on its line", pinned, required)
	}
}

// match returns the first submatch of pattern in the file name of the
// repository.
func match(t *testing.T, name, pattern string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).FindSubmatch(data)
	if m == nil {
		t.Fatalf("Nothing in %s matches %s", name, pattern)
	}
	return string(m[1])
}

func TestTheV3LayoutIsRefused(t *testing.T) {
	dir := copyTree(t)
	path := filepath.Join(dir, "PROJECT")
	project, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const v4, v3 = "\n- go.kubebuilder.io/v4\n", "\n- go.kubebuilder.io/v3\n"
	if n := bytes.Count(project, []byte(v4)); n != 1 {
		t.Fatalf("PROJECT names the layout go.kubebuilder.io/v4 %d times, want once:\n%s", n, project)
	}
	if err := os.WriteFile(path, bytes.Replace(project, []byte(v4), []byte(v3), 1), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, dir, "edit", "--multigroup=false")
	const refusal = `no plugin could be resolved with key "go.kubebuilder.io/v3"`
	if err == nil || !strings.Contains(out, refusal) {
		t.Errorf("kubebuilder edit on the v3 layout: %v\n%s\nwant it refused with %q", err, out, refusal)
	}
}

func TestCreateAPIWantsCmdMain(t *testing.T) {
	dir := copyTree(t)
	before := snapshot(t, dir)

	// PROJECT's comment says so; when a kubebuilder release finds main.go
	// at the root, this fails, and the comment is to be changed.
	out, err := run(t, dir, "create", "api", "--group", "health", "--version", "v1alpha2", "--kind", "Probe",
		"--resource", "--controller=false", "--make=false")
	const refusal = "cmd/main.go file should present in the root directory"
	if err == nil || !strings.Contains(out, refusal) {
		t.Errorf("kubebuilder create api: %v\n%s\nwant it refused with %q, as PROJECT's comment says", err, out, refusal)
	}
	checkSameFiles(t, "kubebuilder create api", before, snapshot(t, dir))
}

// copyTree copies the files git tracks, as they are in the working tree, into
// a temporary directory, and returns it.
func copyTree(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(kubebuilderCLI); err != nil {
		t.Fatalf("No kubebuilder to run: run `make kubebuilder` (`make test` does): %v", err)
	}
	cmd := exec.CommandContext(t.Context(), "git", "ls-files", "-z")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v\n%s", err, stderr.String())
	}
	dir := t.TempDir()
	copied := 0
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(repoRoot, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if _, err := os.Stat(filepath.Join(dir, "PROJECT")); err != nil {
		t.Fatalf("Copied %d files from git ls-files, but no PROJECT: %v", copied, err)
	}
	return dir
}

// run runs bin/kubebuilder with args in dir, and returns what it wrote but
// the usage text it adds to an error, without colors.
func run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	bin, err := filepath.Abs(kubebuilderCLI)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return withoutUsage(colors.ReplaceAllString(string(out), "")), err
}

// colors are the ANSI color codes kubebuilder's log lines carry, to a
// terminal or not.
var colors = regexp.MustCompile("\x1b\\[[0-9;]*m")

// withoutUsage drops from kubebuilder's output the usage text it prints
// after "Error: ...", from the line "Usage:" to the last line of the
// command's flags.
func withoutUsage(out string) string {
	var b strings.Builder
	usage := false
	for line := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(line, "Usage:"):
			usage = true
		case usage && (strings.HasPrefix(line, " ") || strings.TrimSpace(line) == "" || strings.HasSuffix(line, ":\n")):
		default:
			usage = false
			b.WriteString(line)
		}
	}
	return b.String()
}

// mustRun runs bin/kubebuilder with args in dir, and fails the test at
// once if it fails.
func mustRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := run(t, dir, args...); err != nil {
		t.Fatalf("kubebuilder %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// readProject returns the PROJECT file in dir without its comment lines:
// the fields, which kubebuilder reads, and writes back under a header of its
// own.
func readProject(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func parse(t *testing.T, project string) map[string]any {
	t.Helper()
	var fields map[string]any
	if err := yaml.Unmarshal([]byte(project), &fields); err != nil {
		t.Fatalf("Parse PROJECT: %v\n%s", err, project)
	}
	return fields
}

func mustMarshal(t *testing.T, fields map[string]any) string {
	t.Helper()
	out, err := yaml.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// snapshot returns the digest of every file under dir, by slash-separated
// path.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		files[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkSameFiles fails the test for every file what wrote, added or removed
// between the snapshots before and after.
func checkSameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	for name, sum := range after {
		switch was, ok := before[name]; {
		case !ok:
			t.Errorf("%s wrote a new file, %s", what, name)
		case was != sum:
			t.Errorf("%s changed %s", what, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			t.Errorf("%s removed %s", what, name)
		}
	}
}
