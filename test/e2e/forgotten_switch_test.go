package e2e

import (
	"context"
	"io"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

var _ = Describe("A controller beside kube-controller-manager whose node lifecycle loops were left on", Label("upstream"), func() {
	It("says so at once, in a warning event on the node, a metric and its log", func() {
		s := startSidePlane()
		f := s.startFleet()
		id := rand.String(5)
		port, err := harness.NewSecurePort()
		Expect(err).NotTo(HaveOccurred())
		log := gbytes.NewBuffer()
		// A grace three times kube-controller-manager's, as when the flags
		// were not copied over: kube-controller-manager marks first.
		slow := 3 * sideGrace
		startControllerProcessAt(s.env, io.MultiWriter(GinkgoWriter, log), port, "forgotten-"+id, "forgotten-"+id,
			"--node-monitor-grace-period="+slow.String(),
			"--node-startup-grace-period="+slow.String(),
			"--node-monitor-period="+sidePeriod.String(),
			"--partition-freeze-cooldown="+slow.String(),
			"--pod-eviction-timeout=1m")

		By("a node dying, which kube-controller-manager marks Unknown before this controller would")
		dead := f.Nodes()[2]
		f.Stop(dead)
		ctx := context.Background()
		Eventually(func(g Gomega) []string {
			list := &corev1.EventList{}
			g.Expect(s.k8s.List(ctx, list, client.MatchingFields{"involvedObject.kind": "Node", "involvedObject.name": dead})).To(Succeed())
			var messages []string
			for _, e := range list.Items {
				if e.Reason == "ForeignLifecycleWriter" && e.Type == corev1.EventTypeWarning {
					messages = append(messages, e.Message)
				}
			}
			return messages
		}).WithTimeout(sideGrace + 20*time.Second).WithPolling(250 * time.Millisecond).Should(ContainElement(
			ContainSubstring("kube-controller-manager marked this node Unknown while node-lifecycle-controller decides")))
		// Its NoExecute taint, which kube-controller-manager adds at its
		// mark, may come in the same look, and is told apart.
		Expect(string(log.Contents())).To(MatchRegexp(`Another controller writes this node's lifecycle state.*manager="kube-controller-manager" write="mark"`))

		By("counting it once on /metrics")
		admin, err := s.env.AddUser(envtest.User{Name: "forgotten-admin-" + id, Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(scrape(certClient(admin), port.URL("/metrics"), "")()).To(HaveField("Body",
			ContainSubstring(`node_lifecycle_foreign_writes_total{manager="kube-controller-manager",write="mark"} 1`)))
	})
})
