// Package docs runs the commands that docs/getting-started.md and
// docs/operating.md show in their shell code blocks, read from the Markdown,
// so that a doc whose command or output no longer matches the code fails
// `make test`. Each runs as written where it can, in a workspace that stands
// for the repository's root and is the commands' HOME, against a local
// control plane (envtest, from $KUBEBUILDER_ASSETS) whose admin's kubeconfig
// is ~/.kube/config there: `make build` and `make image` write their output
// there, the installers are rendered, linted, applied and installed, the
// controller runs with the flags the docs give it and the demo's timings,
// and its status subcommand prints what the docs show. kubectl and skopeo,
// which are not among the pinned tools, are stood in for by client-go and a
// read of the image archive. A command that cannot run here (one that pushes
// to a registry, or runs this test) is listed with why; a command that is
// neither run nor listed fails the test. The flags the docs name in their
// text must be the binary's.
package docs
