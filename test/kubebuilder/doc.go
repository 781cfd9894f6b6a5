// Package kubebuilder checks that the kubebuilder CLI works with this
// repository as its PROJECT file says. bin/kubebuilder (`make kubebuilder`
// builds it, pinned) reads PROJECT, acts on it with `kubebuilder edit`, and
// writes it back as it was, without touching any other file; the layout
// kubebuilder 4 no longer resolves, go.kubebuilder.io/v3, is refused; and
// `kubebuilder create api` still refuses the tree for want of cmd/main.go, as
// PROJECT's comment says. Each runs the CLI in a copy of the files git
// tracks, never in the repository itself. PROJECT must also name each
// controller as controller-runtime does, and the setup-envtest the Makefile
// pins must be of the controller-runtime minor go.mod requires.
package kubebuilder
