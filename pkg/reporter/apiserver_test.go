package reporter

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestReporterSurvivesAPIServerRestart stops the kube-apiserver, etcd still
// running, for longer than the node's lease lasts, then starts it again: the
// reporter, never restarted, must renew the Lease and report the status
// again, and must have called OnRepeatedFailure while the apiserver was down.
func TestReporterSurvivesAPIServerRestart(t *testing.T) {
	const (
		nodeName      = "restart-node"
		leaseDuration = 2 * time.Second
		// The fault injected: the apiserver stays down until the Lease
		// has expired, as in an outage that makes nodes look dead.
		outage = leaseDuration + time.Second
	)
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(15 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	// Restarting the apiserver keeps its port, which stays set on
	// APIServer.SecureServing (and reserved in envtest's port cache), and
	// its client CA, which CertAuthn keeps in memory. But Stop deletes the
	// certificate directory envtest made up, and Start then makes a new one
	// with a new serving CA, which the rest config already handed out does
	// not trust ("x509: certificate signed by unknown authority"). A
	// directory of our own survives Stop, and Start reuses the serving
	// certificate it finds there, as a real apiserver restarts.
	certDir := t.TempDir()
	env, cfg, kube := startControlPlane(t, func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().CertDir = certDir
	})

	var failures atomic.Int32
	heartbeats, closeIdle, err := NewHeartbeatClient(cfg, time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := New(heartbeats, clock.RealClock{}, Config{
		NodeName:                  nodeName,
		LeaseDurationSeconds:      int32(leaseDuration / time.Second),
		NodeStatusUpdateFrequency: time.Second,
		// Report at every sync, so that the Node's heartbeats show the
		// recovery as the Lease's do.
		NodeStatusReportFrequency: time.Second,
		OnRepeatedFailure: func() {
			failures.Add(1)
			closeIdle()
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	restartRun(t, r)

	ctx := t.Context()
	renewTime := func(g Gomega) time.Time {
		lease, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, nodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
		return lease.Spec.RenewTime.Time
	}
	readyHeartbeat := readyHeartbeatOf(ctx, kube, nodeName)

	// The Node is registered and the Lease created, then renewed.
	g.Eventually(readyHeartbeat).ShouldNot(BeZero())
	var created time.Time
	g.Eventually(func(g Gomega) { created = renewTime(g) }).Should(Succeed())
	g.Eventually(renewTime).Should(BeTemporally(">", created), "lease never renewed")

	renewedBefore := renewTime(g)
	failuresBefore := failures.Load()
	apiServer := env.ControlPlane.APIServer
	crashAPIServer(g, apiServer, certDir)
	stopped := time.Now()
	// The fault: the apiserver stays down, and answers nothing, for the
	// whole outage.
	g.Consistently(func() error {
		_, err := kube.Discovery().ServerVersion()
		return err
	}).WithTimeout(outage).WithPolling(200 * time.Millisecond).ShouldNot(Succeed())
	g.Expect(failures.Load()).To(BeNumerically(">", failuresBefore), "OnRepeatedFailure not called during the outage")
	g.Expect(apiServer.Start()).To(Succeed())
	restarted := time.Now()
	// The reporter's client is built once, against this address and CA.
	g.Expect(apiServer.SecureServing.URL("https", "/").String()).To(Equal(cfg.Host), "apiserver restarted elsewhere")
	g.Expect(string(apiServer.SecureServing.CA)).To(Equal(string(cfg.CAData)), "apiserver restarted with another serving CA")

	// Only the restarted apiserver can have taken a write stamped after
	// the first one stopped. The Node's heartbeat has whole seconds, but
	// the outage alone lasts longer than a second.
	g.Eventually(renewTime).Should(BeTemporally(">", stopped), "lease not renewed after the restart (last renewed %v)", renewedBefore)
	recovered := time.Since(restarted)
	g.Eventually(readyHeartbeat).Should(BeTemporally(">", stopped), "status not reported after the restart")
	t.Logf("Apiserver down %v; lease renewed %v after it was back; OnRepeatedFailure called %d times",
		restarted.Sub(stopped).Round(time.Millisecond), recovered.Round(time.Millisecond), failures.Load()-failuresBefore)
}

// crashAPIServer ends the apiserver started with certDir as a crash does, and
// returns once it has exited. A clean stop would wait up to a minute for the
// reporter's watch of its Node, as for any kubelet's watches. envtest's Stop
// still sends the first signal, for the bookkeeping that lets Start run the
// apiserver again; the kill follows once the apiserver has stopped
// listening.
func crashAPIServer(g Gomega, apiServer *envtest.APIServer, certDir string) {
	pid := pidWithArg(g, "--cert-dir="+certDir)
	stopped := make(chan error, 1)
	go func() { stopped <- apiServer.Stop() }()
	g.Eventually(func() error {
		conn, err := net.DialTimeout("tcp", apiServer.HostPort(), 100*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return errors.New("still listening")
		}
		return nil
	}).Should(Succeed(), "the apiserver kept listening after SIGTERM")
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	g.Eventually(stopped).Should(Receive(BeNil()))
}

// pidWithArg finds the process started with the argument arg.
func pidWithArg(g Gomega, arg string) int {
	entries, err := os.ReadDir("/proc")
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && slices.ContainsFunc(bytes.Split(cmdline, []byte{0}), func(a []byte) bool { return string(a) == arg }) {
			return pid
		}
	}
	g.Expect(arg).To(BeEmpty(), "no process runs with this argument")
	return 0
}

// restartRun runs r, logging to the test, until the test ends.
func restartRun(t *testing.T, r *Reporter) {
	t.Helper()
	// Stack traces of the errors the outage is meant to cause would bury
	// the log.
	opts := zap.Options{Development: true, DestWriter: t.Output()}
	flags := flag.NewFlagSet(t.Name(), flag.ContinueOnError)
	opts.BindFlags(flags)
	if err := flags.Parse([]string{"--zap-stacktrace-level=panic"}); err != nil {
		t.Fatalf("configure logger: %v", err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), zap.New(zap.UseFlagOptions(&opts))))
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		// Run must end before the test does: it logs to the test.
		if err := <-done; err != nil {
			t.Errorf("run reporter: %v", err)
		}
	})
}

// readyHeartbeatOf returns a function that reads the last heartbeat of the
// node's Ready condition, which must be True, with c.
func readyHeartbeatOf(ctx context.Context, c kubernetes.Interface, name string) func(g Gomega) time.Time {
	return func(g Gomega) time.Time {
		node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				g.Expect(cond.Status).To(Equal(corev1.ConditionTrue))
				return cond.LastHeartbeatTime.Time
			}
		}
		g.Expect(node.Status.Conditions).To(ContainElement(HaveField("Type", corev1.NodeReady)))
		return time.Time{}
	}
}
