package e2e

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// noLifecycleNoExecuteEver checks that no version of the nodes the history
// recorded ever carried a node lifecycle NoExecute taint.
func noLifecycleNoExecuteEver(h *nodeHistory, nodes []string) {
	GinkgoHelper()
	for _, n := range nodes {
		for _, v := range h.of(n) {
			Expect(lifecycleNoExecute(v.node)).To(BeEmpty(), "node %s tainted NoExecute at %v", n, v.at)
		}
	}
}

var _ = Describe("Partition across failover and restart", Label("faults"), func() {
	It("keeps the freeze when the leader is SIGKILLed mid-partition, when its standby takes over, and when a process starts long after the marks: no NoExecute taint, no pod marked NotReady or deleted", func() {
		const zones, perZone, silentPerZone = 2, 5, 4
		id := rand.String(5)
		region := "fo-" + id
		leaseName := "nlc-failover-" + id
		f := startFleet(zones*perZone, zones, func(o *fleet.Options) { o.Region = region })
		h := recordNodes(corev1.LabelTopologyRegion + "=" + region)
		// Zones count as partially disrupted only when wholly down, so that
		// the freeze alone holds the silent nodes.
		zoneFlag := "--unhealthy-zone-threshold=1"
		leader := startControllerProcess("a-"+id, leaseName, zoneFlag)
		Eventually(leaderLease(leaseName)).Should(HaveField("HolderIdentity", Not(BeNil())))
		standby := startControllerProcess("b-"+id, leaseName, zoneFlag)
		allReady(f)

		By("80% of every zone losing its heartbeats at once, and the leader marking them")
		partitioned := time.Now()
		silent := partitionEachZone(f, silentPerZone)
		Eventually(func(g Gomega) {
			for _, n := range silent {
				g.Expect(readyStatus(n)(g)).To(Equal(markedUnknown))
			}
		}).WithTimeout(grace + 10*time.Second).Should(Succeed())
		Eventually(freezeEventsSince(partitioned)).Should(ContainElement(nodehealth.ReasonPartitionFreeze))

		By("the leader SIGKILLed, its Lease not released, and the standby taking over")
		leader.Kill()
		podsStayIntact(f, zones*perZone, leaseDuration+grace+evictTimeout+2*time.Second)

		By("the standby SIGKILLed too, and a new process started once the marks are older than a grace period")
		standby.Kill()
		podsStayIntact(f, zones*perZone, 2*grace)
		startControllerProcess("c-"+id, leaseName, zoneFlag)
		podsStayIntact(f, zones*perZone, leaseDuration+grace+evictTimeout+2*time.Second)
		noLifecycleNoExecuteEver(h, f.Nodes())

		By("the partition healing: every node Ready and untainted, every pod there")
		f.Resume(silent...)
		allReady(f)
		podsStayIntact(f, zones*perZone, grace)
		noLifecycleNoExecuteEver(h, f.Nodes())
	})
})

var _ = Describe("A leader SIGKILLed between two halves of a partition", Label("faults"), func() {
	It("leaves the new leader to freeze the partition from the old one's marks and the silences it sees itself: no pod deleted, and every node back untainted", func() {
		// A longer grace than the suite's, so that the second half is
		// still fading, unmarked, when the leader dies right after marking
		// the first; and a pod eviction timeout long enough that a taint
		// the old leader adds before the freeze cannot evict a pod before
		// the new leader freezes.
		const (
			zones, perZone = 2, 5
			spec           = 10 * time.Second
			halfApart      = 4 * time.Second
			podTimeout     = 30 * time.Second
		)
		id := rand.String(5)
		region := "fh-" + id
		leaseName := "nlc-half-" + id
		f := startFleet(zones*perZone, zones, func(o *fleet.Options) { o.Region = region })
		h := recordNodes(corev1.LabelTopologyRegion + "=" + region)
		flags := []string{"--unhealthy-zone-threshold=1", "--node-monitor-grace-period=" + spec.String(), "--node-startup-grace-period=" + spec.String(),
			"--pod-eviction-timeout=" + podTimeout.String(), "--partition-freeze-cooldown=" + spec.String()}
		leader := startControllerProcess("a-"+id, leaseName, flags...)
		Eventually(leaderLease(leaseName)).Should(HaveField("HolderIdentity", Not(BeNil())))
		startControllerProcess("b-"+id, leaseName, flags...)
		allReady(f)

		By("two of every zone's five nodes going silent, and the rest of the partition a few seconds later")
		partitioned := time.Now()
		var first, second []string
		for _, z := range f.Zones() {
			first = append(first, f.InZone(z)[:2]...)
			second = append(second, f.InZone(z)[2:4]...)
		}
		f.Partition(first...)
		time.AfterFunc(halfApart, func() { f.Partition(second...) })

		By("the leader marking the first half, 40% of the nodes, and SIGKILLed at once, before the rest are overdue")
		Eventually(func(g Gomega) {
			for _, n := range first {
				g.Expect(readyStatus(n)(g)).To(Equal(markedUnknown))
			}
		}).WithTimeout(spec + 10*time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		leader.Kill()
		killed := time.Now()
		for _, n := range second {
			Expect(readyStatus(n)(Default)).NotTo(Equal(markedUnknown), "%s was marked before the leader died", n)
		}
		Expect(killed).To(BeTemporally("<", partitioned.Add(halfApart+spec)), "the second half was overdue before the leader died")

		By("the standby taking over, marking the second half, and freezing")
		Eventually(func(g Gomega) {
			for _, n := range second {
				g.Expect(readyStatus(n)(g)).To(Equal(markedUnknown))
			}
		}).WithTimeout(leaseDuration + spec + 10*time.Second).Should(Succeed())
		Eventually(freezeEventsSince(partitioned)).Should(ContainElement(nodehealth.ReasonPartitionFreeze))

		By("the standby keeping, for the leader after it, the time no leader watched: from the old one's last renewal to its takeover")
		Eventually(unwatchedKept).Should(ContainElement(Satisfy(func(s disruption.Span) bool {
			return !s.From.After(killed) && s.To.After(killed)
		})))

		By("no pod deleted past the first half's eviction deadline")
		Consistently(func(g Gomega) {
			pods := fleetPods(f)(g)
			g.Expect(pods).To(HaveLen(zones * perZone))
			for _, p := range pods {
				g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s was deleted", p.Name)
			}
		}).WithTimeout(time.Until(killed.Add(podTimeout + 5*time.Second))).WithPolling(200 * time.Millisecond).Should(Succeed())
		// A taint the old leader added before the freeze is held by it.
		for _, n := range f.Nodes() {
			Expect(lifecycleNoExecuteOn(n)()).To(BeEmpty(), "node %s is tainted NoExecute during the freeze", n)
		}

		By("the partition healing: every node Ready and untainted, every pod there")
		f.Resume(append(first, second...)...)
		allReady(f)
		for _, n := range f.Nodes() {
			Eventually(lifecycleNoExecuteOn(n)).Should(BeEmpty(), "node %s keeps its NoExecute taint", n)
		}
		Expect(fleetPods(f)(Default)).To(HaveLen(zones * perZone))
		noLifecycleNoExecuteEver(h, second)
	})
})

var _ = Describe("Attrition", Label("faults"), func() {
	It("evicts every node of a small cluster that dies one at a time, the third as the first, before and after a restart, and never freezes", func() {
		const nodes = 5
		started := time.Now()
		// One zone, counted partially disrupted only when wholly down:
		// nothing but the freeze could hold these evictions.
		tune := func(o *options.Options) { o.UnhealthyZoneThreshold = 1 }
		stop := startController(tune)
		f := startFleet(nodes, 1, func(o *fleet.Options) { o.Region = "at-" + rand.String(5) })
		allReady(f)
		names := f.Nodes()

		die := func(n string) {
			GinkgoHelper()
			f.Stop(n)
			Eventually(podsOn(n)).WithTimeout(grace+evictTimeout+10*time.Second).Should(BeEmpty(),
				"the pod of %s, dead for longer than grace and eviction timeout, is still there", n)
			// More than a freeze window apart, as nodes dying a minute
			// apart are to a 50s grace.
			Consistently(freezeEventsSince(started)).WithTimeout(grace).
				ShouldNot(ContainElement(nodehealth.ReasonPartitionFreeze))
		}
		By("three nodes dying one after the other")
		for _, n := range names[:3] {
			die(n)
		}

		By("the controller restarted, finding three nodes marked long ago")
		stop()
		startController(tune)
		Consistently(freezeEventsSince(started)).WithTimeout(2 * grace).
			ShouldNot(ContainElement(nodehealth.ReasonPartitionFreeze))

		By("a fourth node dying after the restart")
		die(names[3])
		Expect(podsOn(names[4])()).To(HaveLen(1), "the last live node lost its pod")
	})
})

// proxy stands between a controller and the apiserver, passing every
// request on but those intercept answers itself (it returns true for them).
type proxy struct {
	server *httptest.Server
}

func startProxy(intercept func(w http.ResponseWriter, r *http.Request) bool) *proxy {
	target, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	transport, err := rest.TransportFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	upstream := httputil.NewSingleHostReverseProxy(target)
	upstream.Transport = transport
	upstream.FlushInterval = -1 // watches stream
	p := &proxy{}
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			upstream.ServeHTTP(w, r)
		}
	}))
	p.server.StartTLS()
	DeferCleanup(p.server.Close)
	return p
}

// config is a client configuration that reaches the apiserver through the
// proxy, trusting the proxy's certificate.
func (p *proxy) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	return &rest.Config{Host: p.server.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// oddProxy is a proxy that answers oddly: /readyz with a failing check or
// refused, event writes refused, some patches throttled and some node reads
// failed, all with the apiserver there behind it. It counts what it made
// up.
type oddProxy struct {
	*proxy
	readyz, refused, throttled, broke atomic.Int64
	patches, nodeReads                atomic.Int64
}

func startOddProxy() *oddProxy {
	p := &oddProxy{}
	p.proxy = startProxy(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/readyz" && p.readyz.Add(1)%2 == 0:
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
		case r.URL.Path == "/readyz":
			http.Error(w, "[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
		case strings.Contains(r.URL.Path, "/events") && r.Method == http.MethodPost:
			p.refused.Add(1)
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
		case r.Method == http.MethodPatch && p.patches.Add(1)%4 == 0:
			p.throttled.Add(1)
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") && p.nodeReads.Add(1)%3 == 0:
			p.broke.Add(1)
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`, http.StatusInternalServerError)
		default:
			return false
		}
		return true
	})
	return p
}

var _ = Describe("An apiserver answering oddly", Label("faults"), func() {
	It("is not taken for an outage: with leader election off, a node that stops is marked and its pod evicted, the live ones never, and no time is excused", func() {
		p := startOddProxy()
		outagesBefore := histogram("node_lifecycle_apiserver_outage_seconds").GetSampleCount()
		runManagerOn(p.config(), nil)
		f := startFleet(4, 2)
		allReady(f)

		By("one node stopping behind a proxy that fails readiness checks, refuses events, throttles patches and fails node reads")
		dead, live := f.Nodes()[0], f.Nodes()[1:]
		livePods := podsOn(live...)()
		f.Stop(dead)
		Eventually(readyStatus(dead)).WithTimeout(grace + 10*time.Second).Should(Equal(markedUnknown))
		Eventually(podsOn(dead)).WithTimeout(evictTimeout + 10*time.Second).Should(BeEmpty())
		Consistently(func(g Gomega) {
			nodesReadyAndUntainted(live...)(g)
			g.Expect(podsOn(live...)()).To(ConsistOf(livePods))
		}).WithTimeout(2 * grace).Should(Succeed())

		Expect(p.readyz.Load()).To(BeNumerically(">", 0), "the controller never probed /readyz")
		Expect(p.throttled.Load()+p.broke.Load()).To(BeNumerically(">", 0), "the proxy made nothing up")
		Expect(histogram("node_lifecycle_apiserver_outage_seconds").GetSampleCount()).To(Equal(outagesBefore),
			"answers from an apiserver that was there were taken for an outage")
	})
})

var _ = Describe("Apiserver hang right after a node dies", Label("faults"), func() {
	It("marks no live node for a hang of several grace periods, and still marks the node that stopped just before it and evicts its pod", func() {
		const outage = 5 * time.Second
		startController()
		f := startFleet(6, 3, func(o *fleet.Options) { o.MaxBackoff = 300 * time.Millisecond })
		Eventually(nodesReadyAndUntainted(f.Nodes()...)).Should(Succeed())
		dead, live := f.Nodes()[0], f.Nodes()[1:]
		livePods := podsOn(live...)()

		By("the node stopping, and the apiserver hanging before its grace runs out")
		f.Stop(dead)
		back := apiServerHang.holdFor(outage)

		By("no live node marked or tainted, and the dead one marked and evicted in bounded time")
		Consistently(func(g Gomega) {
			nodesReadyAndUntainted(live...)(g)
			g.Expect(podsOn(live...)()).To(ConsistOf(livePods))
		}).WithTimeout(2*grace + monitorPeriod).Should(Succeed())
		Eventually(readyStatus(dead)).WithTimeout(30 * time.Second).Should(Equal(markedUnknown))
		Eventually(podsOn(dead)).WithTimeout(time.Minute).Should(BeEmpty())
		GinkgoWriter.Printf("node that died just before the hang: pod evicted %v after the apiserver came back\n",
			time.Since(back).Round(time.Second))
		nodesReadyAndUntainted(live...)(Default)
	})
})

// heldFirstRead builds the manager's client so that the first read of the
// named Node waits until release is closed, telling reached when it starts:
// the node's first reconcile can then be kept until the spec has deleted it.
func heldFirstRead(name string, reached chan<- struct{}, release <-chan struct{}) func(*rest.Config, client.Options) (client.Client, error) {
	var once sync.Once
	return func(config *rest.Config, options client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(config, options)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, isNode := obj.(*corev1.Node); isNode && key.Name == name {
					once.Do(func() {
						close(reached)
						<-release
					})
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}), nil
	}
}

var _ = Describe("A node deleted between seeding and its first reconcile", Label("faults"), func() {
	It("leaves no ghost: the zone it was in is fully disrupted, every zone is down, and nothing is tainted NoExecute or evicted", func() {
		zone := "gh-" + rand.String(5)
		dead, ghost := newNodeName(), newNodeName()
		createNode(dead, corev1.ConditionUnknown)
		createNode(ghost, corev1.ConditionTrue)
		for _, n := range []string{dead, ghost} {
			inZone(n, zone)
		}
		pod := createPod("ghost-spec-"+rand.String(5), dead)

		reached, release := make(chan struct{}), make(chan struct{})
		released := false
		DeferCleanup(func() {
			if !released {
				close(release)
			}
		})
		mgr, _ := runManager(func(o *ctrl.Options) { o.NewClient = heldFirstRead(ghost, reached, release) })
		Eventually(reached).Should(BeClosed())

		By("the Ready node deleted while its first reconcile waits, after the guard counted it")
		deleteNode(ghost)
		Eventually(func() bool {
			return apierrors.IsNotFound(mgr.GetCache().Get(context.Background(), client.ObjectKey{Name: ghost}, &corev1.Node{}))
		}).Should(BeTrue())
		close(release)
		released = true

		By("the dead node, alone in the cluster, held as every zone being down holds it")
		Consistently(func(g Gomega) {
			g.Expect(hasNoExecuteTaint(dead)).To(BeFalse(), "the dead node was tainted NoExecute")
			g.Expect(deleted(pod)(g)).To(BeFalse(), "its pod was evicted")
		}).WithTimeout(grace + evictTimeout + 2*time.Second).Should(Succeed())
	})
})

var _ = Describe("A freeze beside long-dead nodes", Label("faults"), func() {
	It("is set off by the nodes that go silent together, not by nodes marked an hour ago, and ends when they return while the dead stay", func() {
		started := time.Now()
		zone := "ld-" + rand.String(5)
		By("four nodes found marked Unknown, ten minutes apart, an hour ago")
		for i := range 4 {
			n := newNodeName()
			createNode(n, "")
			inZone(n, zone)
			at := metav1.NewTime(started.Add(-time.Hour + time.Duration(i)*10*time.Minute))
			setConditions(n, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusUnknown", LastHeartbeatTime: at, LastTransitionTime: at})
		}
		// At 0.4, those four are enough for a freeze if they count; zones
		// count as partially disrupted only when wholly down.
		startController(func(o *options.Options) { o.PartitionFreezeThreshold, o.UnhealthyZoneThreshold = 0.4, 1 })
		f := startFleet(6, 2, func(o *fleet.Options) { o.Region = zone })
		allReady(f)
		Consistently(freezeEventsSince(started)).WithTimeout(2 * grace).
			ShouldNot(ContainElement(nodehealth.ReasonPartitionFreeze))

		By("the six live nodes going silent together, and coming back")
		partitioned := time.Now()
		f.Partition(f.Nodes()...)
		Eventually(freezeEventsSince(partitioned)).WithTimeout(grace + 5*time.Second).
			Should(ContainElement(nodehealth.ReasonPartitionFreeze))
		f.Resume(f.Nodes()...)
		allReady(f)
		Eventually(freezeEventsSince(partitioned)).WithTimeout(2*grace + 5*time.Second).
			Should(ContainElement(nodehealth.ReasonPartitionFreezeEnded))
		podsStayIntact(f, len(f.Nodes()), grace)
	})
})
