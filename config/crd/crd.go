// Package crd holds the project's CustomResourceDefinitions as `make
// manifests` generates them into bases/, for Go programs that install them,
// such as lifecycletest's InstallCRDs.
package crd

import "embed"

// Bases holds the CustomResourceDefinitions, one YAML file each, under
// bases/.
//
//go:embed bases/*.yaml
var Bases embed.FS
