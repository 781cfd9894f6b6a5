package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
)

// controllerBinary builds the controller's binary once per suite, with the
// race detector as the suite itself runs, and returns its path. The suite
// removes it when it ends (removeControllerBinary), not the spec that
// happened to build it.
func controllerBinary() string {
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-controller-")
		Expect(err).NotTo(HaveOccurred())
		binaryDir = dir
		path := filepath.Join(dir, "node-lifecycle-controller")
		cmd := exec.Command("go", "build", "-race", "-o", path, ".")
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build: %s", out)
		binaryPath = path
	})
	Expect(binaryPath).NotTo(BeEmpty(), "the controller binary failed to build in an earlier spec")
	return binaryPath
}

// removeControllerBinary removes the binary controllerBinary built, if any.
func removeControllerBinary() {
	if binaryDir != "" {
		Expect(os.RemoveAll(binaryDir)).To(Succeed())
	}
}

// startControllerProcess runs the controller's binary as a process of its
// own, with the suite's short timings and the flags given after them, its
// output going to the spec's log. It contends for the named leader election
// Lease in the default namespace, with timings short enough for a handover
// in seconds. It returns once the process serves its probes; the spec's end
// stops it.
func startControllerProcess(name, leaseName string, flags ...string) *harness.Process {
	GinkgoHelper()
	return startControllerProcessTo(GinkgoWriter, name, leaseName, flags...)
}

// startControllerProcessTo is startControllerProcess with the process's
// output going to out.
func startControllerProcessTo(out io.Writer, name, leaseName string, flags ...string) *harness.Process {
	GinkgoHelper()
	return startControllerProcessOn(testEnv, out, name, leaseName, flags...)
}

// startControllerProcessOn is startControllerProcessTo against the control
// plane of env.
func startControllerProcessOn(env *envtest.Environment, out io.Writer, name, leaseName string, flags ...string) *harness.Process {
	GinkgoHelper()
	port, err := harness.NewSecurePort()
	Expect(err).NotTo(HaveOccurred())
	return startControllerProcessAt(env, out, port, name, leaseName, flags...)
}

// startControllerProcessAt is startControllerProcessOn with the secure port
// at port.
func startControllerProcessAt(env *envtest.Environment, out io.Writer, port harness.SecurePort, name, leaseName string, flags ...string) *harness.Process {
	GinkgoHelper()
	kubeconfig := writeKubeconfigOn(env, "node-lifecycle-controller-"+name)
	args := append(append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=true",
		"--leader-elect-resource-namespace=default",
		"--leader-elect-resource-name=" + leaseName,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		"--node-monitor-grace-period=" + grace.String(),
		"--node-startup-grace-period=" + startupGrace.String(),
		"--node-monitor-period=" + monitorPeriod.String(),
		"--pod-eviction-timeout=" + evictTimeout.String(),
		"--node-eviction-rate=" + strconv.Itoa(evictionRate),
		"--partition-freeze-cooldown=" + grace.String(),
	}, port.Flags()...), flags...)
	p, err := harness.StartProcess(controllerBinary(), args, out)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
	Expect(p.WaitReady(context.Background(), port.Client, port.URL("/readyz"), time.Minute)).To(Succeed())
	return p
}

// writeKubeconfig writes a kubeconfig for a new user in system:masters on
// the suite's control plane, and returns its path.
func writeKubeconfig(user string) string {
	GinkgoHelper()
	return writeKubeconfigOn(testEnv, user)
}

// writeKubeconfigOn is writeKubeconfig on the control plane of env.
func writeKubeconfigOn(env *envtest.Environment, user string) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(harness.WriteKubeconfig(env, user, path)).To(Succeed())
	return path
}
