package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// NewEnvironment returns a control plane from the binaries in assets, with
// the project's CRDs, so that the controller serves NodeHealthPolicies as it
// does when deployed. Callers may configure the apiserver further before
// StartControlPlane.
func NewEnvironment(assets string) *envtest.Environment {
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	testenv.WithoutServiceAccounts(env)
	return env
}

// StartControlPlane starts env and returns the admin's configuration. When
// it fails it stops whatever did start.
func StartControlPlane(env *envtest.Environment) (*rest.Config, error) {
	cfg, err := env.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start control plane: %w", err), env.Stop())
	}
	return cfg, nil
}

// WriteKubeconfig gives a process under test its own user, a member of
// system:masters, and writes that user's kubeconfig to path. Its own user
// keeps its requests apart from everyone else's in the apiserver's audit
// log.
func WriteKubeconfig(env *envtest.Environment, user, path string) error {
	return WriteUserKubeconfig(env, envtest.User{Name: user, Groups: []string{"system:masters"}}, path)
}

// WriteUserKubeconfig adds user, with its groups, to env's control plane
// with a client certificate, and writes a kubeconfig for it to path.
func WriteUserKubeconfig(env *envtest.Environment, user envtest.User, path string) error {
	u, err := env.AddUser(user, nil)
	if err != nil {
		return fmt.Errorf("add user %s: %w", user.Name, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("render the kubeconfig of %s: %w", user.Name, err)
	}
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// logTo sends the logs of this process's own clients (the fleet's reporters
// and client-go) to a file, so that the terminal shows only what the command
// prints.
func logTo(path string) (closeFn func(), err error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	logger := zap.New(zap.WriteTo(file))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	return func() { _ = file.Close() }, nil
}

// FreeLocalAddr returns a loopback address with a port nobody listens on.
func FreeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
