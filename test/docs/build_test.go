package docs

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// makeBuild runs `make build` in the repository, which holds the source,
// with its binary written to the workspace's bin/. Not its prerequisites
// manifests, generate, fmt and vet: they rewrite the repository's files,
// which other packages' tests read while this one runs, and `make verify`
// fails when they would change anything.
func makeBuild(t *testing.T, w *workspace, c command) {
	w.mustShell(t, w.repo, c.text+" -o manifests -o generate -o fmt -o vet LOCALBIN="+quote(filepath.Join(w.dir, "bin")))
	r := w.mustShell(t, "", "bin/node-lifecycle-controller --version")
	if !strings.HasPrefix(r.stdout, "node-lifecycle-controller ") {
		t.Errorf("bin/node-lifecycle-controller --version printed %q, want its name and version", r.stdout)
	}
}

// makeImage runs `make image` in the repository, with the binary and the
// archive written to the workspace's bin/ and the image builder taken as
// `make test` built it.
func makeImage(t *testing.T, w *workspace, c command) {
	w.mustShell(t, w.repo, c.text+" -o ociimage LOCALBIN="+quote(filepath.Join(w.dir, "bin"))+
		" OCIIMAGE="+quote(filepath.Join(w.repo, "bin", "ociimage")))
	img := makeVar(t, c.text, "IMG")
	files := readArchive(t, filepath.Join(w.dir, "bin", "node-lifecycle-controller.oci.tar"))
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	decode(t, files, "index.json", &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != img {
		t.Errorf("The archive's index names %+v, want one image named %s", index.Manifests, img)
	}
}

// digest is a sha256 digest, which changes with every commit.
var digest = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// inspectImage prints what `skopeo inspect` prints of the archive, its
// architecture, OS and layers, indented as skopeo does, and keeps the lines
// grep keeps. There is no skopeo here; the archive is the OCI layout that
// skopeo reads.
func inspectImage(t *testing.T, w *workspace, c command) {
	files := readArchive(t, filepath.Join(w.dir, "bin", "node-lifecycle-controller.oci.tar"))
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	decode(t, files, "index.json", &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("The archive's index lists %d images, want 1", len(index.Manifests))
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	decode(t, files, blobPath(index.Manifests[0]), &manifest)
	var config struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	decode(t, files, blobPath(manifest.Config), &config)
	if len(manifest.Layers) == 0 {
		t.Fatal("The image has no layers")
	}
	first := fmt.Sprintf("        %q", manifest.Layers[0].Digest)
	if len(manifest.Layers) > 1 {
		first += ","
	}
	got := []string{
		fmt.Sprintf("    %q: %q,", "Architecture", config.Architecture),
		fmt.Sprintf("    %q: %q,", "Os", config.OS),
		`    "Layers": [`,
		first,
	}
	want := strings.Join(c.output, "\n")
	// The doc shows an amd64 machine's image: `make image` builds for the
	// machine's own architecture.
	want = strings.ReplaceAll(want, `"amd64"`, fmt.Sprintf("%q", runtime.GOARCH))
	if digest.ReplaceAllString(strings.Join(got, "\n"), "sha256:…") != digest.ReplaceAllString(want, "sha256:…") {
		t.Errorf("skopeo inspect of the archive would print\n%s\nthe doc shows\n%s", strings.Join(got, "\n"), strings.Join(c.output, "\n"))
	}
}

// descriptor points to a blob of an OCI layout.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
}

func blobPath(d descriptor) string { return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:") }

// readArchive returns the regular files of the OCI archive at name, by
// their path in the layout.
func readArchive(t *testing.T, name string) map[string][]byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatalf("No image archive: %v", err)
	}
	defer func() { _ = f.Close() }()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", name, hdr.Name, err)
		}
		files[path.Clean(hdr.Name)] = data
	}
}

// decode unmarshals the JSON file name of the layout into v.
func decode(t *testing.T, files map[string][]byte, name string, v any) {
	t.Helper()
	data, ok := files[name]
	if !ok {
		t.Fatalf("The archive has no %s", name)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// makeVar returns the value a make command line gives a variable.
func makeVar(t *testing.T, text, name string) string {
	t.Helper()
	for _, word := range shellWords(t, text) {
		if v, ok := strings.CutPrefix(word, name+"="); ok {
			return v
		}
	}
	t.Fatalf("`%s` sets no %s", text, name)
	return ""
}

// quote quotes s for bash.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// shellWords splits a command line into words as bash does, for the
// quoting and line continuations the docs use: no expansions, and no
// pipelines (a | is a word).
func shellWords(t *testing.T, text string) []string {
	t.Helper()
	var (
		words []string
		word  strings.Builder
		in    bool // within a word
		quote rune
	)
	runes := []rune(text)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\' && i+1 < len(runes) && runes[i+1] == '\n':
			i++
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, word.String())
				word.Reset()
				in = false
			}
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("`%s` leaves a quote open", text)
	}
	if in {
		words = append(words, word.String())
	}
	return words
}
