package e2e

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"k8s.io/apimachinery/pkg/util/rand"
)

// kubeadmCommandLine is the command line kubeadm gives kube-controller-manager
// (its static pod manifest, v1.37), without --kubeconfig, which the spec
// sets, followed by the node lifecycle flags kube-controller-manager's
// reference lists, at values an operator might have chosen. The files it
// names are the suite's: kubeconfig, a kubeconfig of the suite's control
// plane, in place of /etc/kubernetes/controller-manager.conf, and clientCA,
// the control plane's client CA, in place of /etc/kubernetes/pki/ca.crt and
// front-proxy-ca.crt.
func kubeadmCommandLine(kubeconfig, clientCA string) []string {
	return []string{
		"--allocate-node-cidrs=true",
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--client-ca-file=" + clientCA,
		"--cluster-cidr=10.244.0.0/16",
		"--cluster-name=kubernetes",
		"--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
		"--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--leader-elect=true",
		"--requestheader-client-ca-file=" + clientCA,
		"--root-ca-file=/etc/kubernetes/pki/ca.crt",
		"--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--use-service-account-credentials=true",
		"--node-monitor-period=1s",
		"--node-eviction-rate=0.2",
		"--secondary-node-eviction-rate=0.02",
		"--large-cluster-size-threshold=40",
		"--unhealthy-zone-threshold=0.5",
		"--kube-api-qps=20",
		"--kube-api-burst=30",
		"--kube-api-content-type=application/vnd.kubernetes.protobuf",
		"--profiling",
		"--v=2",
	}
}

var _ = Describe("A kube-controller-manager command line", func() {
	It("starts the binary unchanged, and says which flags have no effect here", func() {
		out := gbytes.NewBuffer()
		id := rand.String(5)
		flags := kubeadmCommandLine(writeKubeconfig("kcm-auth-"+id), filepath.Join(certDir, "client-cert-auth-ca.crt"))
		startControllerProcessTo(io.MultiWriter(GinkgoWriter, out), "kcm-"+id, "kcm-"+id, flags...)
		for _, flag := range []string{"allocate-node-cidrs", "controllers", "use-service-account-credentials", "profiling"} {
			Expect(string(out.Contents())).To(MatchRegexp(`Accepted a kube-controller-manager flag that has no effect here.*flag="%s"`, flag))
		}
		for _, flag := range []string{"node-monitor-period", "bind-address", "authentication-kubeconfig", "client-ca-file"} {
			Expect(string(out.Contents())).NotTo(ContainSubstring(`flag="`+flag+`"`), "--%s, which this binary acts on, is noted", flag)
		}
	})

	It("fails with one readable line per flag whose value this binary cannot honor", func() {
		cmd := exec.Command(controllerBinary(), "--controllers=*,-taint-eviction-controller",
			"--enable-leader-migration=true", "--node-monitor-grace-period=5m", "--secure-port=10257")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "the binary did not fail: %v", err)
		Expect(exit.ExitCode()).To(Equal(2))
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		Expect(lines).To(ConsistOf(
			HavePrefix("node-lifecycle-controller: invalid --node-startup-grace-period=1m0s"),
			HavePrefix("node-lifecycle-controller: invalid --node-monitor-grace-period=5m0s"),
			HavePrefix("node-lifecycle-controller: invalid --controllers=*,-taint-eviction-controller: leaves out taint-eviction-controller"),
			HavePrefix("node-lifecycle-controller: invalid --enable-leader-migration=true"),
		))
	})
})
