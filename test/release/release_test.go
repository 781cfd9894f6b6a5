package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// release is what make release was asked for and where it wrote it.
type release struct {
	dir, version, image string
}

func (r release) path(name string) string { return filepath.Join(r.dir, name) }

func (r release) chartFile() string {
	return "node-lifecycle-controller-" + strings.TrimPrefix(r.version, "v") + ".tgz"
}

func releaseUnderTest(t *testing.T) release {
	t.Helper()
	r := release{dir: os.Getenv("RELEASE_DIR"), version: os.Getenv("RELEASE_VERSION"), image: os.Getenv("RELEASE_IMAGE")}
	if r.dir == "" || r.version == "" || r.image == "" {
		t.Fatal("RELEASE_DIR, RELEASE_VERSION and RELEASE_IMAGE are not set: run `make release VERSION=vX.Y.Z`, which sets them")
	}
	return r
}

// TestTheReleaseHoldsItsArtifactsAndTheirChecksums: every artifact is there,
// nothing else is, and SHA256SUMS names each once with its true checksum.
func TestTheReleaseHoldsItsArtifactsAndTheirChecksums(t *testing.T) {
	r := releaseUnderTest(t)
	want := []string{"SHA256SUMS", "crds.yaml", "install.yaml", "release-notes.md", r.chartFile()}
	for _, arch := range []string{"amd64", "arm64"} {
		base := "node-lifecycle-controller-" + r.version + "-linux-" + arch
		want = append(want, base+".oci.tar", base+".spdx.json")
	}
	slices.Sort(want)
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("the release holds\n%v\nwant\n%v", got, want)
	}

	sums, err := os.ReadFile(r.path("SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for line := range strings.Lines(string(sums)) {
		sum, name, ok := strings.Cut(strings.TrimSpace(line), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: %q is not `<sha256>  <file>`", line)
		}
		if _, twice := listed[name]; twice {
			t.Errorf("SHA256SUMS lists %s twice", name)
		}
		listed[name] = sum
	}
	for _, name := range want {
		if name == "SHA256SUMS" {
			continue
		}
		data, err := os.ReadFile(r.path(name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if listed[name] != hex.EncodeToString(sum[:]) {
			t.Errorf("SHA256SUMS gives %s as %q; its sha256 is %x", name, listed[name], sum)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("SHA256SUMS lists %s, which the release does not hold", name)
	}
}

// TestTheReleaseNotesNameTheVersion: the notes come from CHANGELOG.md.
func TestTheReleaseNotesNameTheVersion(t *testing.T) {
	r := releaseUnderTest(t)
	notes, err := os.ReadFile(r.path("release-notes.md"))
	if err != nil {
		t.Fatal(err)
	}
	title := "# node-lifecycle-controller " + r.version + "\n\n"
	if !strings.HasPrefix(string(notes), title) || len(bytes.TrimSpace(notes)) <= len(strings.TrimSpace(title)) {
		t.Errorf("release-notes.md does not open with %q and a body:\n%s", title, notes)
	}
}

// spdx is as much of an SPDX 2.3 document as the test reads.
type spdx struct {
	SPDXVersion string `json:"spdxVersion"`
	Packages    []struct {
		Name        string `json:"name"`
		VersionInfo string `json:"versionInfo"`
		Checksums   []struct {
			Algorithm string `json:"algorithm"`
		} `json:"checksums"`
	} `json:"packages"`
	Relationships []struct {
		Type string `json:"relationshipType"`
	} `json:"relationships"`
}

// TestTheSBOMsListTheModulesOfTheBuild: each binary's SBOM describes the
// release's module at its version, and lists the modules go.mod requires
// at the versions it requires.
func TestTheSBOMsListTheModulesOfTheBuild(t *testing.T) {
	r := releaseUnderTest(t)
	required := map[string]string{}
	out, err := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Path}} {{.Version}}",
		"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "k8s.io/apimachinery").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		path, version, _ := strings.Cut(strings.TrimSpace(line), " ")
		required[path] = version
	}
	for _, arch := range []string{"amd64", "arm64"} {
		name := "node-lifecycle-controller-" + r.version + "-linux-" + arch + ".spdx.json"
		data, err := os.ReadFile(r.path(name))
		if err != nil {
			t.Fatal(err)
		}
		var doc spdx
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) == 0 {
			t.Fatalf("%s: spdxVersion %q with %d packages", name, doc.SPDXVersion, len(doc.Packages))
		}
		root := doc.Packages[0]
		if root.Name != "github.com/nodelifecycle/node-lifecycle-controller" || root.VersionInfo != r.version ||
			len(root.Checksums) != 1 || root.Checksums[0].Algorithm != "SHA256" {
			t.Errorf("%s: describes %s %s with checksums %v; want the module at %s, with the binary's SHA256", name,
				root.Name, root.VersionInfo, root.Checksums, r.version)
		}
		found := map[string]string{}
		for _, p := range doc.Packages[1:] {
			found[p.Name] = p.VersionInfo
		}
		for path, version := range required {
			if found[path] != version {
				t.Errorf("%s: lists %s at %q; go.mod requires %s", name, path, found[path], version)
			}
		}
		if len(doc.Relationships) != len(doc.Packages) {
			t.Errorf("%s: %d relationships for %d packages", name, len(doc.Relationships), len(doc.Packages))
		}
	}
}

// TestTheInstallersApply: crds.yaml and then install.yaml are accepted, as
// written, by a real apiserver, and install.yaml runs the release's image.
func TestTheInstallersApply(t *testing.T) {
	r := releaseUnderTest(t)
	// No CRDs of its own: the installers bring theirs.
	_, cfg := testenv.Start(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crds := readObjects(t, r.path("crds.yaml"))
	if len(crds) != 1 || crds[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("crds.yaml holds %d objects, want the one CustomResourceDefinition", len(crds))
	}
	install := readObjects(t, r.path("install.yaml"))
	// Create fills in what the apiserver defaults: compare as written.
	written := crds[0].DeepCopy()
	createObject(t, c, crds[0])
	for _, obj := range install {
		if obj.GetKind() == "CustomResourceDefinition" {
			// The same CRD as crds.yaml's, which is there already.
			if !equality.Semantic.DeepEqual(obj.Object["spec"], written.Object["spec"]) {
				t.Errorf("install.yaml's CustomResourceDefinition %s differs from crds.yaml's", obj.GetName())
			}
			continue
		}
		createObject(t, c, obj)
	}
	var images []string
	for _, obj := range install {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, ctr := range containers {
			image, _ := ctr.(map[string]any)["image"].(string)
			images = append(images, image)
		}
	}
	if want := []string{r.image + ":" + r.version}; !slices.Equal(images, want) {
		t.Errorf("install.yaml runs the images %v, want %v", images, want)
	}
}

// TestTheChartInstalls: the packaged chart names the release as its version
// and appVersion, runs the release's image, and installs on a real
// apiserver with helm.
func TestTheChartInstalls(t *testing.T) {
	r := releaseUnderTest(t)
	files := readChart(t, r.path(r.chartFile()))
	var meta struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["node-lifecycle-controller/Chart.yaml"], &meta); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if meta.Version != strings.TrimPrefix(r.version, "v") || meta.AppVersion != r.version {
		t.Errorf("Chart.yaml: version %q, appVersion %q; want %q and %q", meta.Version, meta.AppVersion,
			strings.TrimPrefix(r.version, "v"), r.version)
	}
	var values struct {
		ControllerManager struct {
			Container struct {
				Image struct {
					Repository string `json:"repository"`
					Tag        string `json:"tag"`
				} `json:"image"`
			} `json:"container"`
		} `json:"controllerManager"`
	}
	if err := yaml.Unmarshal(files["node-lifecycle-controller/values.yaml"], &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	if img := values.ControllerManager.Container.Image; img.Repository != r.image || img.Tag != r.version {
		t.Errorf("values.yaml: image %s:%s, want %s:%s", img.Repository, img.Tag, r.image, r.version)
	}

	env, _ := testenv.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := harness.WriteKubeconfig(env, "helm", kubeconfig); err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join("..", "..", "bin", "helm")
	cmd := exec.CommandContext(t.Context(), helm, "install", "node-lifecycle", r.path(r.chartFile()),
		"--namespace", "node-lifecycle-system", "--create-namespace", "--kubeconfig", kubeconfig)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
}

// readObjects reads the objects of a multi-document YAML file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var objs []*unstructured.Unstructured
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// createObject creates obj as written, with strict field validation, and
// waits for a CRD to serve.
func createObject(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	if err := c.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	if obj.GetKind() != "CustomResourceDefinition" {
		return
	}
	if err := harness.WaitEstablished(ctx, c, obj.GetName()); err != nil {
		t.Fatal(err)
	}
}

// readChart returns the files of a packaged chart by their path.
func readChart(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		files[h.Name] = b
	}
}
