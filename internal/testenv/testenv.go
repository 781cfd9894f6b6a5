// Package testenv starts a control plane for a test: kube-apiserver and
// etcd from $KUBEBUILDER_ASSETS, which make builds into bin/. It imports
// neither pkg/fleet nor test/harness, so that their tests, in-package ones
// included, can use it.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsDir returns $KUBEBUILDER_ASSETS once it holds kube-apiserver and
// etcd. command names what sets it, for the error message.
func AssetsDir(command string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set: run `%s`, which builds kube-apiserver and etcd into bin/ and sets it", command)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s (run `make envtest-assets`): %w", dir, bin, err)
		}
	}
	return dir, nil
}

// Start starts a control plane from AssetsDir, configured by each of
// configure in turn, and stops it when tb ends. It returns the environment
// and an admin's rest config.
func Start(tb testing.TB, configure ...func(*envtest.Environment)) (*envtest.Environment, *rest.Config) {
	tb.Helper()
	assets, err := AssetsDir("make test")
	if err != nil {
		tb.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	for _, c := range configure {
		c(env)
	}
	cfg, err := env.Start()
	if err != nil {
		// Start can fail once the processes are up (adding the admin,
		// waiting for the default namespace, installing CRDs), and leaves
		// them running.
		tb.Fatal(errors.Join(fmt.Errorf("start control plane: %w", err), env.Stop()))
	}
	tb.Cleanup(func() {
		if err := env.Stop(); err != nil {
			tb.Errorf("stop control plane: %v", err)
		}
	})
	return env, cfg
}

// WithoutServiceAccounts turns off the apiserver's ServiceAccount admission
// plugin: no kube-controller-manager runs to create the service accounts it
// would have pods wait for.
func WithoutServiceAccounts(env *envtest.Environment) {
	env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ServiceAccount")
}
