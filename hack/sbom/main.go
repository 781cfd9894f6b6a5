// Command sbom writes an SPDX 2.3 software bill of materials, as JSON, of a
// Go binary: the main module and every module linked into it, with their
// versions and the checksums go.sum pins, read from the build information
// the Go toolchain records in the binary. make release writes one for each
// architecture's binary.
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	binary := flag.String("binary", "", "the Go binary to describe")
	name := flag.String("name", "", "the document's name; default: the binary's file name")
	version := flag.String("version", "", "the release the binary was built as; default: the main module's version")
	created := flag.Int64("created", time.Now().Unix(), "the document's creation time, in seconds since 1970, so that a release can be written again byte for byte")
	flag.Parse()
	if *binary == "" {
		fmt.Fprintln(os.Stderr, "sbom: --binary is required")
		os.Exit(2)
	}
	if err := run(os.Stdout, *binary, *name, *version, time.Unix(*created, 0).UTC()); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

// The SPDX 2.3 JSON document, as much of it as a Go binary fills.
type document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      creationInfo   `json:"creationInfo"`
	Packages          []pkg          `json:"packages"`
	Relationships     []relationship `json:"relationships"`
}

type creationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type pkg struct {
	Name             string        `json:"name"`
	SPDXID           string        `json:"SPDXID"`
	VersionInfo      string        `json:"versionInfo"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	Checksums        []checksum    `json:"checksums,omitempty"`
	ExternalRefs     []externalRef `json:"externalRefs"`
	Comment          string        `json:"comment,omitempty"`
}

type checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type externalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

func run(w io.Writer, binary, name, version string, created time.Time) error {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read the build information of %s: %w", binary, err)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read %s: %w", binary, err)
	}
	sum := sha256.Sum256(data)
	if name == "" {
		name = filepath.Base(binary)
	}
	if version == "" {
		version = bi.Main.Version
	}
	doc := document{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: name,
		DocumentNamespace: "https://github.com/nodelifecycle/node-lifecycle-controller/spdx/" + name + "-" + hex.EncodeToString(sum[:8]),
		CreationInfo:      creationInfo{Created: created.Format(time.RFC3339), Creators: []string{"Tool: node-lifecycle-controller hack/sbom", "Tool: " + bi.GoVersion}},
	}
	root := pkg{Name: bi.Main.Path, SPDXID: "SPDXRef-Package-main", VersionInfo: version, DownloadLocation: "https://" + bi.Main.Path,
		Checksums:    []checksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(sum[:])}},
		ExternalRefs: []externalRef{purl(bi.Main.Path, version)},
		Comment:      "The binary " + filepath.Base(binary) + ", built with " + bi.GoVersion + " for " + setting(bi, "GOOS") + "/" + setting(bi, "GOARCH") + ".",
	}
	doc.Packages = append(doc.Packages, root)
	doc.Relationships = append(doc.Relationships, relationship{"SPDXRef-DOCUMENT", "DESCRIBES", root.SPDXID})
	for i, dep := range bi.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		p := pkg{Name: m.Path, SPDXID: fmt.Sprintf("SPDXRef-Package-%d", i+1), VersionInfo: m.Version,
			DownloadLocation: "https://proxy.golang.org/" + escape(m.Path) + "/@v/" + escape(m.Version) + ".zip",
			ExternalRefs:     []externalRef{purl(m.Path, m.Version)}}
		if m.Sum != "" {
			p.Comment = "go.sum: " + m.Sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, relationship{root.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write the document: %w", err)
	}
	return nil
}

// escape writes a module path or version as the module proxy protocol
// does: each upper-case letter as "!" and its lower case.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// purl is a module's package URL.
func purl(path, version string) externalRef {
	return externalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
		ReferenceLocator: "pkg:golang/" + path + "@" + version}
}

// setting returns one of the build's settings.
func setting(bi *buildinfo.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
