package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// defaultArchive is where `make image` writes the archive, relative to this
// package's directory, in which go test runs the test.
const defaultArchive = "../../bin/node-lifecycle-controller.oci.tar"

// Media types of the OCI image spec.
const (
	mediaTypeIndex     = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest  = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig    = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer     = "application/vnd.oci.image.layer.v1.tar"
	mediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// labels are the OCI annotations the image must carry as labels.
var labels = []string{
	"org.opencontainers.image.title",
	"org.opencontainers.image.description",
	"org.opencontainers.image.source",
	"org.opencontainers.image.licenses",
	"org.opencontainers.image.version",
	"org.opencontainers.image.revision",
}

// elfMachines is the ELF machine of each architecture the controller is
// built for.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// TestImage opens the archive that `make image` writes, follows it from
// index.json to the binary, and runs the binary when it is built for this
// machine.
func TestImage(t *testing.T) {
	archive := os.Getenv("IMAGE_ARCHIVE")
	if archive == "" {
		archive = defaultArchive
	}
	files := readArchive(t, archive)

	var layout struct {
		ImageLayoutVersion string `json:"imageLayoutVersion"`
	}
	decode(t, files, "oci-layout", &layout)
	if layout.ImageLayoutVersion != "1.0.0" {
		t.Errorf("oci-layout: imageLayoutVersion is %q, want 1.0.0", layout.ImageLayoutVersion)
	}

	// Every blob must be what its name says, referenced or not.
	for name, data := range files {
		hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/")
		if !ok {
			continue
		}
		if got := sha256Hex(data); got != hexDigest {
			t.Errorf("%s: content has sha256 %s", name, got)
		}
	}

	var idx index
	decode(t, files, "index.json", &idx)
	if idx.SchemaVersion != 2 || idx.MediaType != mediaTypeIndex {
		t.Errorf("index.json: schemaVersion %d, mediaType %q; want 2, %q", idx.SchemaVersion, idx.MediaType, mediaTypeIndex)
	}
	if len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %d manifests, want 1", len(idx.Manifests))
	}
	desc := idx.Manifests[0]
	if desc.MediaType != mediaTypeManifest {
		t.Errorf("index.json: manifest media type %q, want %q", desc.MediaType, mediaTypeManifest)
	}
	if ref := desc.Annotations["org.opencontainers.image.ref.name"]; ref == "" {
		t.Error("index.json: the manifest has no org.opencontainers.image.ref.name annotation, which names the image for skopeo and podman load")
	} else {
		t.Logf("image %s, manifest %s", ref, desc.Digest)
	}

	var m manifest
	if err := json.Unmarshal(blob(t, files, desc), &m); err != nil {
		t.Fatalf("manifest %s: %v", desc.Digest, err)
	}
	if m.SchemaVersion != 2 || m.MediaType != mediaTypeManifest {
		t.Errorf("manifest: schemaVersion %d, mediaType %q; want 2, %q", m.SchemaVersion, m.MediaType, mediaTypeManifest)
	}
	if m.Config.MediaType != mediaTypeConfig {
		t.Errorf("manifest: config media type %q, want %q", m.Config.MediaType, mediaTypeConfig)
	}
	if len(m.Layers) != 1 {
		t.Fatalf("manifest: %d layers, want 1 (the binary alone)", len(m.Layers))
	}

	var cfg imageConfig
	if err := json.Unmarshal(blob(t, files, m.Config), &cfg); err != nil {
		t.Fatalf("config %s: %v", m.Config.Digest, err)
	}
	if cfg.OS != "linux" {
		t.Errorf("config: os %q, want linux", cfg.OS)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("config: user %q, want 65532:65532 (distroless's nonroot, which config/manager expects)", cfg.Config.User)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/manager" {
		t.Errorf("config: entrypoint %q, want [/manager]", got)
	}
	if len(cfg.Config.Cmd) > 0 {
		t.Errorf("config: cmd %q, want none: config/manager passes the arguments", cfg.Config.Cmd)
	}
	for _, label := range labels {
		if cfg.Config.Labels[label] == "" {
			t.Errorf("config: label %s is missing or empty", label)
		}
	}
	if len(cfg.RootFS.DiffIDs) != 1 {
		t.Fatalf("config: %d diff_ids, want 1 for the one layer", len(cfg.RootFS.DiffIDs))
	}

	layer := uncompressedLayer(t, m.Layers[0], blob(t, files, m.Layers[0]))
	if got, want := "sha256:"+sha256Hex(layer), cfg.RootFS.DiffIDs[0]; got != want {
		t.Errorf("layer: uncompressed digest %s, but the config's diff_id is %s", got, want)
	}
	manager := extractManager(t, layer)
	checkStatic(t, manager, cfg.Architecture)

	t.Run("version", func(t *testing.T) {
		label := cfg.Config.Labels["org.opencontainers.image.version"]
		if want := os.Getenv("IMAGE_VERSION"); want != "" && label != want {
			t.Errorf("label org.opencontainers.image.version is %q, want %q", label, want)
		}
		// The binary is stamped with the version its image carries as a
		// label: run it where it can run; elsewhere, the stamp is at least
		// in its data, where -X writes it (-trimpath keeps -ldflags out of
		// the build settings).
		binary, err := os.ReadFile(manager)
		if err != nil {
			t.Fatal(err)
		}
		if label == "" || !bytes.Contains(binary, []byte(label)) {
			t.Errorf("/manager does not hold its image's version %q", label)
		}
		if cfg.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
			return
		}
		out, err := exec.CommandContext(t.Context(), manager, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("/manager --version: %v; output:\n%s", err, out)
		}
		if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "node-lifecycle-controller" || f[1] != label {
			t.Errorf("/manager --version printed %q, want node-lifecycle-controller %s", out, label)
		}
	})

	t.Run("manager --help", func(t *testing.T) {
		if cfg.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
			t.Skipf("the image is for linux/%s; this machine, %s/%s, cannot run it", cfg.Architecture, runtime.GOOS, runtime.GOARCH)
		}
		cmd := exec.CommandContext(t.Context(), manager, "--help")
		// The image sets no environment; neither does the test, so
		// that the binary cannot lean on the host's.
		cmd.Env = []string{}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("/manager --help: %v; output:\n%s", err, out)
		}
		if !bytes.Contains(out, []byte("Usage: node-lifecycle-controller")) || !bytes.Contains(out, []byte("--node-monitor-grace-period")) {
			t.Errorf("/manager --help printed no usage of the controller:\n%s", out)
		}
	})
}

// readArchive returns the regular files of the OCI archive at name, by
// their path in the layout.
func readArchive(t *testing.T, name string) map[string][]byte {
	t.Helper()
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no image archive at %s: build it with `make image` (or point IMAGE_ARCHIVE at one)", name)
	}
	if err != nil {
		t.Fatalf("opening the image archive: %v", err)
	}
	// Only read from: a close error loses nothing.
	defer func() { _ = f.Close() }()

	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: reading the tar: %v", name, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: reading %s: %v", name, hdr.Name, err)
		}
		files[path.Clean(hdr.Name)] = data
	}
	return files
}

// decode unmarshals the JSON file name of the layout into v.
func decode(t *testing.T, files map[string][]byte, name string, v any) {
	t.Helper()
	data, ok := files[name]
	if !ok {
		t.Fatalf("the archive has no %s: it is not an OCI image layout", name)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// blob returns the content d points to, after checking its size and digest.
func blob(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		t.Fatalf("digest %q is not sha256", d.Digest)
	}
	data, ok := files["blobs/sha256/"+hexDigest]
	if !ok {
		t.Fatalf("the archive has no blob %s (%s)", d.Digest, d.MediaType)
	}
	if int64(len(data)) != d.Size {
		t.Fatalf("blob %s (%s) has %d bytes, its descriptor says %d", d.Digest, d.MediaType, len(data), d.Size)
	}
	if got := sha256Hex(data); got != hexDigest {
		t.Fatalf("blob %s (%s) has sha256 %s", d.Digest, d.MediaType, got)
	}
	return data
}

// uncompressedLayer returns the layer's tar, gunzipped if its media type
// says it is gzipped.
func uncompressedLayer(t *testing.T, d descriptor, data []byte) []byte {
	t.Helper()
	switch d.MediaType {
	case mediaTypeLayer:
		return data
	case mediaTypeLayerGzip:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("layer %s: %v", d.Digest, err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("layer %s: gunzip: %v", d.Digest, err)
		}
		return out
	default:
		t.Fatalf("layer %s: media type %q, want %q or %q", d.Digest, d.MediaType, mediaTypeLayer, mediaTypeLayerGzip)
		return nil
	}
}

// extractManager writes the layer's /manager into a temporary directory and
// returns its path.
func extractManager(t *testing.T, layer []byte) string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("layer: reading the tar: %v", err)
		}
		name := path.Clean("/" + hdr.Name)
		names = append(names, name)
		if name != "/manager" {
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			t.Fatalf("layer: /manager is of tar type %q, want a regular file", hdr.Typeflag)
		}
		if perm := fs.FileMode(hdr.Mode).Perm(); perm&0o005 != 0o005 {
			t.Errorf("layer: /manager has mode %v, which user 65532 cannot read and execute", perm)
		}
		out := filepath.Join(t.TempDir(), "manager")
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("layer: reading /manager: %v", err)
		}
		if err := os.WriteFile(out, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("layer: no /manager among %q", names)
	return ""
}

// checkStatic checks that the file at name is an ELF executable for arch
// that asks for no dynamic loader: the image has none.
func checkStatic(t *testing.T, name, arch string) {
	t.Helper()
	f, err := elf.Open(name)
	if err != nil {
		t.Fatalf("/manager is not an ELF binary: %v", err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/manager is dynamically linked (it has a PT_INTERP program header); build it with CGO_ENABLED=0")
		}
	}
	want, ok := elfMachines[arch]
	if !ok {
		t.Errorf("config: architecture %q is not one the controller is built for (%q)", arch, slices.Sorted(maps.Keys(elfMachines)))
		return
	}
	if f.Machine != want {
		t.Errorf("/manager is for %v, but the config says %s (%v)", f.Machine, arch, want)
	}
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
