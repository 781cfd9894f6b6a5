// Package e2e runs the controllers against a real kube-apiserver and etcd
// (envtest, with the binaries built by test/tools) and checks what an
// operator would see: conditions, taints and events on real Node objects.
package e2e
