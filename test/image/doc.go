// Package image checks the controller's OCI image archive that `make image`
// writes: its layout, the digests and sizes of its blobs, its config and
// labels, and that the binary in it is static and runs.
package image
