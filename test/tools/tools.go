//go:build tools

// Package tools pins the Kubernetes control-plane components that the test
// suites run against. Nothing here is compiled into the controller; the
// Makefile builds each command from this module into bin/.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubemark"
)
