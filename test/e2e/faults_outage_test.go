package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// apiServerOutage is a way for the suite's apiserver to be out of reach for
// a while: start takes it away, end brings it back.
type apiServerOutage struct {
	what       string
	start, end func()
}

var (
	apiServerCrash = apiServerOutage{"crashing, etcd kept, and started again",
		crashAPIServer,
		func() { Expect(testEnv.ControlPlane.APIServer.Start()).To(Succeed()) }}
	// A stopped process keeps its connections and its port: requests hang
	// rather than fail, until it goes on.
	apiServerHang = apiServerOutage{"hanging, requests held rather than refused, and going on",
		func() { Expect(harness.Suspend(apiServerPID())).To(Succeed()) },
		func() { Expect(syscall.Kill(apiServerPID(), syscall.SIGCONT)).To(Succeed()) }}
)

var _ = Describe("Apiserver outage", Label("faults"), func() {
	DescribeTable("marks no node and evicts no pod for an outage longer than the grace period, and still evicts from a node dead before it",
		func(o apiServerOutage, start func()) {
			// The fault: the apiserver out of reach for well over a grace
			// period.
			const outage = 5 * time.Second
			Expect(outage).To(BeNumerically(">", 2*grace))

			start()
			// The reporters retry a failed renewal at most 300ms apart, as
			// a kubelet's 7s is to a 50s grace.
			f := startFleet(6, 3, func(o *fleet.Options) { o.MaxBackoff = 300 * time.Millisecond })
			Eventually(nodesReadyAndUntainted(f.Nodes()...)).Should(Succeed())

			By("one node dying before the outage, and being marked and tainted")
			dead, live := f.Nodes()[0], f.Nodes()[1:]
			f.Stop(dead)
			Eventually(readyStatus(dead)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
			Eventually(func() bool { return hasNoExecuteTaint(dead) }).Should(BeTrue())
			livePods := podsOn(live...)()
			Expect(livePods).To(HaveLen(len(live)))
			marksBefore := markDelays()
			outagesBefore := histogram("node_lifecycle_apiserver_outage_seconds")

			By("the apiserver " + o.what + ", out of reach for " + outage.String())
			back := o.holdFor(outage)

			By("the outage kept in the cluster, for a leader that did not see it")
			// Written as soon as the controller reaches the apiserver again,
			// and dropped two grace periods after the outage's end.
			Eventually(unwatchedKept).Should(ContainElement(Satisfy(func(s disruption.Span) bool {
				return s.To.Sub(s.From) >= outage/2
			})))

			By("no live node marked, tainted or losing its pod for two grace periods after")
			Consistently(func(g Gomega) {
				nodesReadyAndUntainted(live...)(g)
				g.Expect(podsOn(live...)()).To(ConsistOf(livePods))
			}).WithTimeout(2*grace + monitorPeriod).Should(Succeed())
			Expect(markDelays().GetSampleCount()).To(Equal(marksBefore.GetSampleCount()), "a node was marked after the outage")
			Expect(histogram("node_lifecycle_apiserver_outage_seconds").GetSampleCount()).
				To(BeNumerically(">", outagesBefore.GetSampleCount()), "the outage was not seen")

			By("the pod of the node dead before the outage being evicted all the same")
			// Not at once: the outage set off the partition freeze, and
			// the freeze lasts until heartbeats are seen again. The live
			// reads before each mark see them at once; the watches see
			// them only when client-go's reflectors, backing off since
			// their relists failed, next try (up to 30s apart).
			Eventually(podsOn(dead)).WithTimeout(time.Minute).Should(BeEmpty())
			GinkgoWriter.Printf("pod of the dead node evicted %v after the apiserver came back\n", time.Since(back).Round(time.Second))
		},
		Entry("crash", apiServerCrash, func() { startController() }),
		Entry("hang", apiServerHang, func() { startController() }),
		// SetupWithManager cannot watch the requests of a manager it did
		// not build: its probe, every monitor period, notices the outage.
		Entry("crash, the controllers added to a manager built elsewhere", apiServerCrash, startControllerSetUpElsewhere),
		Entry("hang, the controllers added to a manager built elsewhere", apiServerHang, startControllerSetUpElsewhere),
	)
})

// holdFor takes the apiserver out of reach for d, checking that it stays
// so, and brings it back; it returns when it did. The spec's end brings it
// back if the spec fails first.
func (o apiServerOutage) holdFor(d time.Duration) (back time.Time) {
	GinkgoHelper()
	o.start()
	ended := false
	DeferCleanup(func() {
		if !ended {
			o.end()
		}
	})
	Consistently(apiServerAnswers).WithTimeout(d).WithPolling(200*time.Millisecond).
		ShouldNot(Succeed(), "the apiserver answered during the outage")
	o.end()
	ended = true
	return time.Now()
}

// unwatchedKept returns the spans no leader could mark a node in (apiserver
// outages, the time before a takeover) that the kube-node-lease Namespace
// carries (safety.AnnotationUnwatched).
func unwatchedKept(g Gomega) []disruption.Span {
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns)).To(Succeed())
	v, kept := ns.Annotations[safety.AnnotationUnwatched]
	if !kept {
		return nil
	}
	spans, err := safety.DecodeUnwatched(v)
	g.Expect(err).NotTo(HaveOccurred())
	return spans
}

// apiServerAnswers asks the apiserver for its version, giving up after a
// moment, as a hung apiserver would keep an ordinary request forever.
func apiServerAnswers() error {
	quick := rest.CopyConfig(cfg)
	quick.Timeout = 100 * time.Millisecond
	cs, err := kubernetes.NewForConfig(quick)
	if err != nil {
		return err
	}
	_, err = cs.Discovery().ServerVersion()
	return err
}

// nodesReadyAndUntainted checks that every named node is Ready with no
// taints at all.
func nodesReadyAndUntainted(names ...string) func(g Gomega) {
	return func(g Gomega) {
		for _, n := range names {
			node := &corev1.Node{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: n}, node)).To(Succeed())
			c := condition(node, corev1.NodeReady)
			g.Expect(c).NotTo(BeNil(), "node %s has no Ready condition", n)
			g.Expect(c.Status).To(Equal(corev1.ConditionTrue), "node %s", n)
			g.Expect(node.Spec.Taints).To(BeEmpty(), "node %s", n)
		}
	}
}

// podsOn lists the UIDs of the pods bound to the named nodes that are not
// being deleted.
func podsOn(nodes ...string) func() []string {
	return func() []string {
		var uids []string
		for _, n := range nodes {
			list := &corev1.PodList{}
			Expect(k8s.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault),
				client.MatchingFields{"spec.nodeName": n})).To(Succeed())
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil {
					uids = append(uids, string(p.UID))
				}
			}
		}
		return uids
	}
}

// crashAPIServer kills the suite's kube-apiserver, etcd left running, and
// returns once nothing answers on its port. A clean stop would drain
// requests for up to a minute; a crash is the outage wanted, and quick.
// envtest's Stop does the bookkeeping that lets Start run it again, so it
// sends the first signal; the kill follows as soon as the apiserver has
// stopped listening.
func crashAPIServer() {
	apiServer := testEnv.ControlPlane.APIServer
	pid := apiServerPID()
	stopped := make(chan error, 1)
	go func() { stopped <- apiServer.Stop() }()
	addr := apiServer.HostPort()
	Eventually(func() error {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return errors.New("still listening")
		}
		return nil
	}).Should(Succeed(), "the apiserver kept listening after SIGTERM")
	Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	Eventually(stopped).Should(Receive(BeNil()))
}

// apiServerPID finds the suite's kube-apiserver among the processes by the
// certificate directory it alone was started with.
func apiServerPID() int {
	flag := []byte("--cert-dir=" + certDir)
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if bytes.Equal(arg, flag) {
				return pid
			}
		}
	}
	Fail("no process runs with " + string(flag))
	return 0
}
