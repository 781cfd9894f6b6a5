// Command ociimage builds the controller's container image without a
// container engine: it puts an already built static linux binary at
// /manager in a single layer on an empty base, and writes the image as an
// OCI archive (a tar of an OCI image layout) that skopeo, podman load and
// crane read.
//
// The archive depends only on its inputs: every file time is the --created
// time, no owner or group names are recorded, and the layout is tarred in
// lexical order, so two builds from the same binary and flags write the same
// bytes.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// entrypoint is where the binary lives in the image, as in the
	// Dockerfile and config/manager.
	entrypoint = "/manager"
	// nonroot is distroless's nonroot user and group, which the
	// Dockerfile's image runs as and config/manager's securityContext
	// expects.
	nonroot = "65532:65532"

	title       = "node-lifecycle-controller"
	description = "Drop-in replacement for kube-controller-manager's node lifecycle and taint eviction controllers, built on controller-runtime."
	// licenses is the SPDX id of the repository's LICENSE.
	licenses = "Apache-2.0"

	// refNameAnnotation names the image in index.json; skopeo's
	// oci-archive:PATH:REF and podman load look it up.
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// options are the command's flags.
type options struct {
	binary   string
	output   string
	tag      string
	arch     string
	version  string
	revision string
	source   string
	created  string
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "path of the static linux binary to put at "+entrypoint+" (required)")
	flag.StringVar(&o.output, "output", "", "path of the OCI archive to write (required)")
	flag.StringVar(&o.tag, "tag", "node-lifecycle-controller:latest", "image reference recorded as "+refNameAnnotation)
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "architecture of the binary, as GOARCH spells it")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version label")
	flag.StringVar(&o.revision, "revision", "unknown", "org.opencontainers.image.revision label (the commit)")
	flag.StringVar(&o.source, "source", "https://github.com/nodelifecycle/node-lifecycle-controller", "org.opencontainers.image.source label")
	flag.StringVar(&o.created, "created", "", "creation time and file time of everything in the image, in seconds since the Unix epoch (default $SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "ociimage: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.binary == "" || o.output == "" {
		return errors.New("--binary and --output are required")
	}
	if o.version == "" || o.revision == "" || o.source == "" {
		return errors.New("--version, --revision and --source must not be empty: they are the image's labels")
	}
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", flag.Args())
	}
	created, err := createdTime(o.created)
	if err != nil {
		return err
	}
	img, err := buildImage(o, created)
	if err != nil {
		return err
	}
	return writeArchive(img, o.tag, o.output, created)
}

// createdTime parses the --created flag, falling back to SOURCE_DATE_EPOCH
// (https://reproducible-builds.org/specs/source-date-epoch/) and then to the
// epoch itself, so that the default build is reproducible too.
func createdTime(flagValue string) (time.Time, error) {
	value, name := flagValue, "--created"
	if value == "" {
		value, name = os.Getenv("SOURCE_DATE_EPOCH"), "SOURCE_DATE_EPOCH"
	}
	if value == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	seconds, err := strconv.ParseInt(value, 10, 64)
	if err != nil || seconds < 0 {
		return time.Time{}, fmt.Errorf("%s=%q is not a number of seconds since the Unix epoch", name, value)
	}
	return time.Unix(seconds, 0).UTC(), nil
}

// buildImage returns an OCI image of one layer holding the binary, with
// the config the Dockerfile's image has.
func buildImage(o options, created time.Time) (v1.Image, error) {
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	layerTar, err := layerTar(binary, created)
	if err != nil {
		return nil, err
	}
	// go-containerregistry gzips at BestSpeed; the default level makes the
	// layer a tenth smaller for a few seconds more, and BestCompression
	// would take twice as long again for a few kilobytes.
	layer, err := tarball.LayerFromOpener(
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.DefaultCompression),
	)
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}

	// empty.Image has Docker media types; the archive is OCI throughout.
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the empty config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = o.arch
	cfg.Config = v1.Config{
		Entrypoint: []string{entrypoint},
		User:       nonroot,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       title,
			"org.opencontainers.image.description": description,
			"org.opencontainers.image.source":      o.source,
			"org.opencontainers.image.licenses":    licenses,
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.revision":    o.revision,
		},
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "hack/ociimage: COPY manager " + entrypoint,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
		return nil, fmt.Errorf("setting the creation time: %w", err)
	}
	return img, nil
}

// layerTar returns the uncompressed layer: the binary at /manager, owned by
// root and only readable and executable by the nonroot user, so that the
// running controller cannot rewrite its own binary.
func layerTar(binary []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     entrypoint[1:],
		Mode:     0o755,
		Size:     int64(len(binary)),
		ModTime:  created,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeArchive writes img as an OCI image layout in a scratch directory,
// tars that directory into a temporary file beside output and renames it
// into place, so that a failed build leaves no half-written archive.
func writeArchive(img v1.Image, tag, output string, created time.Time) (err error) {
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return fmt.Errorf("making a scratch directory: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
			err = fmt.Errorf("removing the scratch directory: %w", rmErr)
		}
	}()

	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: tag})); err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}

	f, err := os.CreateTemp(filepath.Dir(output), filepath.Base(output)+".tmp-")
	if err != nil {
		return fmt.Errorf("creating the archive: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := tarDir(f, dir, created); err != nil {
		return fmt.Errorf("writing %s: %w", output, err)
	}
	// CreateTemp makes the file 0600; an archive is no secret.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", output, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", output, err)
	}
	if err := os.Rename(f.Name(), output); err != nil {
		return fmt.Errorf("writing %s: %w", output, err)
	}
	return nil
}

// tarDir writes the tree under dir to w, in lexical order, with every
// entry's time set to mtime and its owner root, so that the bytes depend
// only on the tree's names and contents.
func tarDir(w io.Writer, dir string, mtime time.Time) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, info.Size()
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			return copyFile(tw, path)
		default:
			return fmt.Errorf("%s: not a regular file or directory", path)
		}
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// copyFile copies the content of the file at path to w.
func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	// Only read from: a close error loses nothing.
	defer func() { _ = f.Close() }()
	_, err = io.Copy(w, f)
	return err
}
