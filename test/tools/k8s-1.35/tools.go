//go:build tools

// Package tools pins the Kubernetes 1.35 control-plane components that
// make test-compat runs the e2e suite's compat specs against. Nothing here is
// compiled into the controller; make envtest-assets-minors builds each command
// from this module into bin/k8s-1.35/.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
