// Package harness holds what the demo (test/demo) and the side-by-side
// benchmark (test/bench) share: a local control plane started from
// $KUBEBUILDER_ASSETS, an envtest user with its own kubeconfig for each
// process under test, and controller binaries run as child processes that
// are stopped with SIGTERM and never outlive the command that started them.
package harness
