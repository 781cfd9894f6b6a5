package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/leadergate"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// writeTap is a proxy between one controller process and the apiserver.
// It records when each write of the process reached it, the writes to the
// process's leader election Lease aside, and can stall the process's
// watches.
type writeTap struct {
	*proxy
	// watches stalls the process's watches of pods, nodes and Leases.
	watches *watchHold

	mu     sync.Mutex
	writes []tappedWrite
}

// tappedWrite is a write as the tap saw it arrive.
type tappedWrite struct {
	at   time.Time
	what string
}

// startWriteTap starts a writeTap for a process whose leader election Lease
// is leaseName in the default namespace.
func startWriteTap(leaseName string) *writeTap {
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + metav1.NamespaceDefault + "/leases"
	t := &writeTap{watches: newWatchHoldOf("pods", "nodes", "leases")}
	target, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	transport, err := rest.TransportFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	upstream := httputil.NewSingleHostReverseProxy(target)
	upstream.Transport = t.watches.wrap(transport)
	upstream.FlushInterval = -1 // watches stream
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions:
		case r.URL.Path == leases || r.URL.Path == leases+"/"+leaseName:
		default:
			t.mu.Lock()
			t.writes = append(t.writes, tappedWrite{at: time.Now(), what: r.Method + " " + r.URL.Path})
			t.mu.Unlock()
		}
		upstream.ServeHTTP(w, r)
	}))
	server.StartTLS()
	DeferCleanup(server.Close)
	// Close waits for every request, a stalled watch too.
	DeferCleanup(t.watches.let)
	t.proxy = &proxy{server: server}
	return t
}

// since returns the writes that reached the tap after at.
func (t *writeTap) since(at time.Time) func() []string {
	return func() []string {
		t.mu.Lock()
		defer t.mu.Unlock()
		var out []string
		for _, w := range t.writes {
			if w.at.After(at) {
				out = append(out, w.what)
			}
		}
		return out
	}
}

// kubeconfig writes a kubeconfig that reaches the apiserver through the
// tap, and returns its path.
func (t *writeTap) kubeconfig() string {
	c := t.config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["tap"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["tap"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["tap"] = &clientcmdapi.Context{Cluster: "tap", AuthInfo: "tap"}
	kc.CurrentContext = "tap"
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

var _ = Describe("A leader stopped past its Lease", Label("faults"), func() {
	It("writes nothing once it wakes beside the replica that took over: the silent node's pod is evicted once, its NoExecute taint keeps its timeAdded, and no live node is marked", func() {
		id := rand.String(5)
		region := "fz-" + id
		leaseName := "nlc-frozen-" + id
		f := startFleet(4, 1, func(o *fleet.Options) { o.Region = region })

		By("a leader whose every request passes a tap, and a standby")
		tap := startWriteTap(leaseName)
		leaderLog := gbytes.NewBuffer()
		// The second --kubeconfig wins: the leader reaches the apiserver
		// only through the tap.
		leader := startControllerProcessTo(io.MultiWriter(GinkgoWriter, leaderLog), "a-"+id, leaseName, "--kubeconfig="+tap.kubeconfig())
		Eventually(leaderLease(leaseName)).Should(HaveField("HolderIdentity", Not(BeNil())))
		holder := ptr.Deref(leaderLease(leaseName)(Default).HolderIdentity, "")
		startControllerProcess("b-"+id, leaseName)
		allReady(f)
		history := recordNodes(corev1.LabelTopologyRegion + "=" + region)
		Expect(leaderLease(leaseName)(Default).HolderIdentity).To(HaveValue(Equal(holder)), "the standby took the Lease from a live leader")

		By("a node going silent, marked and tainted NoExecute by the leader")
		silent, live := f.Nodes()[0], f.Nodes()[1:]
		f.Stop(silent)
		added := unreachableAdded(silent)
		Expect(tap.since(time.Time{})()).To(ContainElement("PATCH /api/v1/nodes/"+silent), "the leader did not taint the node itself")
		// The leader marks the node's pod NotReady beside the taint. A
		// write it has let through its gate when it is stopped, between
		// the gate and the wire, goes out when it wakes, and no gate can
		// call it back: it is stopped once that mark has landed, with no
		// decision of its in flight.
		Eventually(podReadyStatus(fleetPod(silent))).Should(Equal(corev1.ConditionFalse))

		By("the leader stopped, the standby taking over, and evicting the silent node's pod meanwhile")
		// The silent node's pod tolerates nothing: its eviction falls due a
		// pod eviction timeout after the taint, while the leader is
		// stopped. The new leader evicts it; the old one finds it due as
		// soon as it wakes. Its watches stall from its pause until it
		// exits, so that it wakes to the cache it stopped with, as a
		// process whose backlog of events outlasts its elector's last
		// renew deadline would: without the stall, the eviction may reach
		// its cache first, and whether it writes is a race.
		tap.watches.hold()
		pausedAt := time.Now()
		Expect(leader.Pause()).To(Succeed())
		Expect(pausedAt).To(BeTemporally("<", added.Add(evictTimeout)), "the pod's eviction fell due before the leader was stopped")
		resumed := false
		DeferCleanup(func() {
			if !resumed {
				Expect(leader.Resume()).To(Succeed())
			}
		})
		Eventually(func(g Gomega) {
			g.Expect(leaderLease(leaseName)(g).HolderIdentity).To(HaveValue(And(Not(BeEmpty()), Not(Equal(holder)))))
		}).WithTimeout(leaseDuration + 10*time.Second).Should(Succeed())
		// The old leader stays stopped until the eviction it would find
		// due on waking has been made.
		Eventually(deleted(fleetPod(silent))).WithTimeout(time.Until(added.Add(evictTimeout)) + 10*time.Second).Should(BeTrue())
		taker := ptr.Deref(leaderLease(leaseName)(Default).HolderIdentity, "")
		GinkgoWriter.Printf("%s took the Lease from %s while it was stopped\n", taker, holder)

		By("the old leader waking, writing nothing, and exiting once its elector sees the loss")
		resumedAt := time.Now()
		Expect(leader.Resume()).To(Succeed())
		resumed = true
		Eventually(leader.Exited()).WithTimeout(leaseDuration+renewDeadline+20*time.Second).Should(BeClosed(),
			"the old leader never noticed that it lost the Lease")
		tap.watches.let()
		// A request sent just before the exit may reach the tap just after.
		// An Event is no decision: one the process had let through its
		// gate when it was stopped, between the gate and the wire, goes
		// out when it wakes, and changes no node and no pod. Every other write must be refused before it is
		// sent.
		Consistently(func() []string {
			return slices.DeleteFunc(tap.since(resumedAt)(), func(w string) bool {
				return strings.HasPrefix(w, "POST ") && strings.HasSuffix(w, "/events")
			})
		}).WithTimeout(time.Second).Should(BeEmpty(),
			"the old leader wrote after it woke with its Lease gone")
		refused := strings.Count(string(leaderLog.Contents()), leadergate.ErrNotLeader.Error())
		GinkgoWriter.Printf("the old leader tried %d writes after it woke, refused before they were sent\n", refused)
		Expect(leaderLease(leaseName)(Default).HolderIdentity).To(HaveValue(Equal(taker)))

		By("the silent node's pod evicted once, by the new leader")
		pod := fleetPod(silent)
		Eventually(deleted(pod)).Should(BeTrue())
		Eventually(evictionEvents(pod.Name)).Should(HaveLen(1))
		// A second eviction would be a second event or, from the same
		// recorder, a repeat folded into the first one.
		Consistently(func(g Gomega) {
			events := evictionEvents(pod.Name)(g)
			g.Expect(events).To(HaveLen(1))
			g.Expect(eventCount(events[0])).To(BeEquivalentTo(1))
		}).WithTimeout(time.Second).Should(Succeed())

		By("the silent node tainted once, its timeAdded kept, and the live nodes left alone throughout")
		_, once := taintedOnce(history, silent)
		Expect(once).To(Equal(added))
		for _, n := range live {
			versions := history.of(n)
			Expect(versions).NotTo(BeEmpty())
			for _, v := range versions {
				Expect(lifecycleNoExecute(v.node)).To(BeEmpty(), "live node %s tainted NoExecute at %v", n, v.at)
				Expect(condition(v.node, corev1.NodeReady)).To(HaveField("Status", corev1.ConditionTrue), "live node %s marked at %v", n, v.at)
			}
		}
	})
})
