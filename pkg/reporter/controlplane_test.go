package reporter

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// startControlPlane starts a control plane, as testenv.Start does with
// configure, and returns once the apiserver has created kube-node-lease,
// where the reporters write. It returns the environment and an admin's
// config and client.
func startControlPlane(tb testing.TB, configure ...func(*envtest.Environment)) (*envtest.Environment, *rest.Config, kubernetes.Interface) {
	tb.Helper()
	env, cfg := testenv.Start(tb, configure...)
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
