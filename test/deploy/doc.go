// Package deploy checks the installer: config/default rendered by bin/kustomize
// the way `make build-installer` renders dist/install.yaml, then sent to a
// real kube-apiserver (envtest, with the binaries built by test/tools) in
// dry-run, so that an unknown field, a wrong kind, an invalid value or a pod
// that breaks the restricted Pod Security Standard fails `make test`. It also
// checks what the code relies on: two replicas with leader election, probes
// and a metrics Service on the secure port the binary serves, and bindings
// whose subjects name the rendered ServiceAccount; and it runs the binary as
// that ServiceAccount, with only the installer's RBAC, until its secure port
// is ready and serves /metrics to the installer's metrics-reader. Neither
// grants any right on ConfigMaps: only config/dry-run, the installer of a
// dry run, does, on the record's ConfigMap by name (and create, which RBAC
// cannot narrow); the binary run with its args and RBAC keeps its record of
// a node gone silent there and writes nothing to the node. The Helm chart in
// dist/chart is held to the same: linted by bin/helm, rendered with its
// defaults into the same objects as config/default and with dryRun.enable
// into those of config/dry-run (but the Namespace, which a chart leaves to
// its release), and sent to the apiserver the same way. Every flag of
// kube-controller-manager's --help must be known to the binary.
package deploy
