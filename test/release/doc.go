// Package release opens and checks every artifact `make release` writes:
// the checksums, the SBOMs, the release notes, crds.yaml and install.yaml
// applied to a real apiserver (envtest), and the packaged chart installed on
// another. `make release` runs it with RELEASE_DIR, RELEASE_VERSION and
// RELEASE_IMAGE set; test/image checks the images.
package release
