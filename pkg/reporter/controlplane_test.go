package reporter

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startControlPlane starts kube-apiserver and etcd from KUBEBUILDER_ASSETS
// until tb ends, with the apiserver's flags as configure sets them (nil
// leaves envtest's), and returns once the apiserver has created
// kube-node-lease, where the reporters write. It returns the environment
// and an admin's config and client.
func startControlPlane(tb testing.TB, configure func(*envtest.Environment)) (*envtest.Environment, *rest.Config, kubernetes.Interface) {
	tb.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		tb.Fatal("KUBEBUILDER_ASSETS is not set: run `make test` or `make bench`, which build kube-apiserver and etcd into bin/")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	if configure != nil {
		configure(env)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		tb.Fatalf("start the envtest control plane from %s: %v", assets, err)
	}
	tb.Cleanup(func() {
		if err := env.Stop(); err != nil {
			tb.Errorf("stop the envtest control plane: %v", err)
		}
	})
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(tb.Context(), 50*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			_, err := admin.CoreV1().Namespaces().Get(ctx, corev1.NamespaceNodeLease, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
	if err != nil {
		tb.Fatalf("wait for namespace %s: %v", corev1.NamespaceNodeLease, err)
	}
	return env, cfg, admin
}
