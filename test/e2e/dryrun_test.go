package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/shadow"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// The timings both controllers run with beside each other: kube-controller-
// manager takes no grace below its monitor period's granularity, so these
// are a little longer than the suite's.
const (
	sideGrace   = 4 * time.Second
	sidePeriod  = time.Second
	sideStartup = 5 * time.Second
	sideRecord  = "default/nlc-dry-run"
	// sideUserAgent names the dry run's requests, and so its field
	// manager, apart from the fleet's in the same process.
	sideUserAgent = "node-lifecycle-controller-dry-run-e2e"
)

// sideBySide is a control plane of its own with kube-controller-manager's
// node lifecycle and taint eviction controllers deciding, and this
// controller in a dry run beside them.
type sideBySide struct {
	env        *envtest.Environment
	cfg        *rest.Config
	k8s        client.Client
	kubeconfig string
	// kcmConfig is kube-controller-manager's kubeconfig, and kcm the
	// process last started.
	kcmConfig string
	kcm       *harness.Process
}

// startSideBySide starts the control plane, kube-controller-manager and the
// dry run in this process, contending for the leader election Lease "nlc".
func startSideBySide() *sideBySide {
	GinkgoHelper()
	s := startSidePlane()
	dryCfg := rest.CopyConfig(s.cfg)
	dryCfg.UserAgent = sideUserAgent
	runManagerOn(dryCfg, func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = "nlc"
		o.LeaderElectionNamespace = "default"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = ptr.To(leaseDuration), ptr.To(renewDeadline), ptr.To(retryPeriod)
	}, func(o *options.Options) {
		o.DryRun = true
		o.DryRunRecord = sideRecord
		o.NodeMonitorGracePeriod, o.NodeMonitorPeriod, o.NodeStartupGracePeriod = sideGrace, sidePeriod, sideStartup
		o.NodeEvictionRate = 10
		o.PodEvictionTimeout = time.Minute // the fleet's pods tolerate the taints for 2s
	})
	return s
}

// startDryRunProcess runs the controller's binary in a dry run beside
// kube-controller-manager, with the timings startSideBySide gives the one
// in this process.
func (s *sideBySide) startDryRunProcess(name string) *harness.Process {
	GinkgoHelper()
	return startControllerProcessOn(s.env, GinkgoWriter, name, "nlc",
		append([]string{"--dry-run", "--dry-run-record=" + sideRecord}, sideFlags...)...)
}

// sideFlags are the timings of a controller process beside
// kube-controller-manager, those startSideBySide gives the one in this
// process.
var sideFlags = []string{
	"--node-monitor-grace-period=" + sideGrace.String(),
	"--node-monitor-period=" + sidePeriod.String(),
	"--node-startup-grace-period=" + sideStartup.String(),
	"--partition-freeze-cooldown=" + sideGrace.String(),
	"--node-eviction-rate=10",
	"--pod-eviction-timeout=1m",
}

// startSidePlane starts a control plane of its own with kube-controller-
// manager's node lifecycle and taint eviction controllers on it.
func startSidePlane() *sideBySide {
	GinkgoHelper()
	env := harness.NewEnvironment(os.Getenv("KUBEBUILDER_ASSETS"))
	env.CRDDirectoryPaths = []string{filepath.Join("..", "..", "config", "crd", "bases")}
	restCfg, err := harness.StartControlPlane(env)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
	c, err := client.New(restCfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	s := &sideBySide{env: env, cfg: restCfg, k8s: c, kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	Expect(harness.WriteKubeconfig(env, "admin", s.kubeconfig)).To(Succeed())

	s.kcmConfig = filepath.Join(dir, "kcm.kubeconfig")
	Expect(harness.WriteKubeconfig(env, "kube-controller-manager", s.kcmConfig)).To(Succeed())
	s.startKubeControllerManager(upstreamLoops)
	return s
}

// upstreamLoops names kube-controller-manager's node lifecycle and taint
// eviction controllers, for --controllers.
const upstreamLoops = "node-lifecycle-controller,taint-eviction-controller"

// startKubeControllerManager starts kube-controller-manager on the control
// plane with the controllers given, at the timings the dry run beside it
// runs with, until the spec ends or s.kcm is stopped.
func (s *sideBySide) startKubeControllerManager(controllers string) {
	GinkgoHelper()
	s.startKubeControllerManagerWith(controllers, sideGrace, sideStartup)
}

// startKubeControllerManagerWith starts kube-controller-manager as
// startKubeControllerManager does, with the grace and startup grace given.
func (s *sideBySide) startKubeControllerManagerWith(controllers string, grace, startup time.Duration) {
	GinkgoHelper()
	addr, err := harness.FreeLocalAddr()
	Expect(err).NotTo(HaveOccurred())
	host, port, _ := strings.Cut(addr, ":")
	kcm, err := harness.StartProcess(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager"), []string{
		"--kubeconfig=" + s.kcmConfig,
		"--controllers=" + controllers,
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--node-monitor-grace-period=" + grace.String(),
		"--node-monitor-period=" + sidePeriod.String(),
		"--node-startup-grace-period=" + startup.String(),
		"--node-eviction-rate=10",
		"--bind-address=" + host,
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(GinkgoT().TempDir(), "kcm-serving"),
		"--authentication-skip-lookup",
	}, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = kcm.Stop(10 * time.Second) })
	s.kcm = kcm
}

// startFleet starts six nodes in two zones, a pod on each that tolerates
// the lifecycle NoExecute taints for 2s, and waits until all are Ready.
func (s *sideBySide) startFleet() *fleet.Fleet {
	GinkgoHelper()
	ctx := context.Background()
	f, err := fleet.Start(ctx, s.cfg, fleet.Options{
		Nodes: 6, Zones: 2, NamePrefix: "side-" + rand.String(4) + "-", PodsPerNode: 1,
		LeaseDurationSeconds: 2, NodeStatusUpdateFrequency: time.Second,
		PodTolerations: []corev1.Toleration{
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](2)},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](2)},
		},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	Eventually(func(g Gomega) {
		for _, n := range f.Nodes() {
			node := &corev1.Node{}
			g.Expect(s.k8s.Get(ctx, client.ObjectKey{Name: n}, node)).To(Succeed())
			g.Expect(fleet.ReadyIs(corev1.ConditionTrue)(node)).To(BeTrue(), "node %s not Ready", n)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return f
}

// expectNothingWritten checks that no field of any Node or Pod is managed
// by the dry run, whose requests carry the user agent given, and that its
// events are all on its ConfigMap.
func (s *sideBySide) expectNothingWritten(userAgent string) {
	GinkgoHelper()
	ctx := context.Background()
	nodeList := &corev1.NodeList{}
	Expect(s.k8s.List(ctx, nodeList)).To(Succeed())
	podList := &corev1.PodList{}
	Expect(s.k8s.List(ctx, podList)).To(Succeed())
	var objs []client.Object
	for i := range nodeList.Items {
		objs = append(objs, &nodeList.Items[i])
	}
	for i := range podList.Items {
		objs = append(objs, &podList.Items[i])
	}
	for _, o := range objs {
		for _, m := range o.GetManagedFields() {
			Expect(m.Manager).NotTo(HavePrefix(userAgent), "%T %s written by the dry run", o, o.GetName())
		}
	}
	events := &corev1.EventList{}
	Expect(s.k8s.List(ctx, events)).To(Succeed())
	for _, e := range events.Items {
		if e.Source.Component == controllers.DryRunEventSource || e.ReportingController == controllers.DryRunEventSource {
			Expect(e.InvolvedObject.Kind).To(Equal("ConfigMap"), "a dry-run event on %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name)
		}
	}
}

// dryRunTaintEvents returns the dry run's events about adding or removing
// the NoExecute taint of any of the nodes, as "reason: message".
func (s *sideBySide) dryRunTaintEvents(g Gomega, nodes []string) []string {
	events := &corev1.EventList{}
	g.Expect(s.k8s.List(context.Background(), events)).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.Reason != shadow.ReasonWouldTaint && e.Reason != shadow.ReasonWouldUntaint {
			continue
		}
		for _, n := range nodes {
			if strings.Contains(e.Message, "node "+n+" ") || strings.HasSuffix(e.Message, "node "+n) {
				out = append(out, e.Reason+": "+e.Message)
			}
		}
	}
	return out
}

// dryRunLeader returns who holds the dry run's leader election Lease.
func (s *sideBySide) dryRunLeader(g Gomega) string {
	lease := &coordinationv1.Lease{}
	g.Expect(s.k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: controllers.DryRunLeaseName("nlc")}, lease)).To(Succeed())
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// compare runs the compare command against the control plane and returns
// its report.
func (s *sideBySide) compare(g Gomega, format string) string {
	cmd := exec.Command(controllerBinary(), "compare", "--kubeconfig="+s.kubeconfig, "--dry-run-record="+sideRecord, "-o", format)
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "compare: %s", out)
	return string(out)
}

// report returns the compare command's JSON report.
func (s *sideBySide) report(g Gomega) shadow.Report {
	var r shadow.Report
	g.Expect(json.Unmarshal([]byte(s.compare(g, "json")), &r)).To(Succeed())
	return r
}

// expectHeldFrozen checks that upstream tainted each of the nodes and
// evicted its pod, and the dry run did neither, its partition freeze
// holding both.
func expectHeldFrozen(g Gomega, r shadow.Report, nodes []string) {
	for _, n := range nodes {
		e := episodeOf(g, r, n)
		g.Expect(e.Upstream.NoExecute).NotTo(BeEmpty(), "upstream has not tainted %s", n)
		g.Expect(e.Upstream.Evicted).To(Equal(1), "upstream has not evicted from %s", n)
		g.Expect(e.Ours.NoExecute).To(BeEmpty(), "the dry run tainted %s", n)
		g.Expect(e.Ours.Evicted).To(BeZero(), "the dry run evicted from %s", n)
		g.Expect(e.NoExecuteHeld).To(Equal(disruption.HeldFrozen))
		g.Expect(e.EvictionsHeld).To(Equal(disruption.HeldFrozen))
	}
}

// expectMarkedByBoth expects both controllers to have marked the episode's
// node, ours no later than upstream's by more than a monitor period and a
// second: ours marks at the deadline, upstream at its next monitor pass.
// Upstream's pass can come later still on a loaded machine, so only the
// one side is bounded.
func expectMarkedByBoth(g Gomega, e shadow.EpisodeReport) {
	g.Expect(e.Ours.Marked).NotTo(BeNil(), "the dry run has not marked %s", e.Node)
	g.Expect(e.Upstream.Marked).NotTo(BeNil(), "upstream has not marked %s", e.Node)
	g.Expect(*e.Ours.Marked).To(BeTemporally("<=", e.Upstream.Marked.Add(sidePeriod+time.Second)),
		"the dry run marked %s after upstream by more than a monitor period", e.Node)
}

// episodesOf returns the node's episodes in the report, oldest first.
func episodesOf(r shadow.Report, node string) []shadow.EpisodeReport {
	var out []shadow.EpisodeReport
	for _, e := range r.Episodes {
		if e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

// episodeOf returns the node's latest episode in the report.
func episodeOf(g Gomega, r shadow.Report, node string) shadow.EpisodeReport {
	for i := len(r.Episodes) - 1; i >= 0; i-- {
		if r.Episodes[i].Node == node {
			return r.Episodes[i]
		}
	}
	g.Expect(node).To(BeEmpty(), "no episode of node %s in the record", node)
	return shadow.EpisodeReport{}
}

var _ = Describe("A dry run beside kube-controller-manager", Label("upstream"), func() {
	It("writes nothing, never takes the real lease, and records where the two differ: a dead node both mark, taint and evict, nothing held; a partition upstream evicts through and the dry run freezes", Label("compat"), func() {
		s := startSideBySide()
		ctx := context.Background()
		f := s.startFleet()
		nodes := f.Nodes()

		By("the dry run leading on a lease of its own, the real one untouched")
		Eventually(func(g Gomega) {
			g.Expect(s.k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: controllers.DryRunLeaseName("nlc")}, &coordinationv1.Lease{})).To(Succeed())
		}).Should(Succeed())
		err := s.k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "nlc"}, &coordinationv1.Lease{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the real lease was taken: %v", err)

		By("a node dying: both mark it and taint it, and nothing is held")
		dead := nodes[1]
		f.Stop(dead)
		Eventually(func(g Gomega) {
			e := episodeOf(g, s.report(g), dead)
			g.Expect(e.Ours.Marked).NotTo(BeNil())
			g.Expect(e.Upstream.Marked).NotTo(BeNil())
			g.Expect(e.Ours.NoExecute).To(Equal(corev1.TaintNodeUnreachable))
			g.Expect(e.Upstream.NoExecute).To(Equal(corev1.TaintNodeUnreachable))
			g.Expect(e.Upstream.Evicted).To(Equal(1))
			// Both count the pod's 2s from their own taint: whichever
			// deletes first, the dry run held nothing back.
			g.Expect(e.EvictionsHeld).To(BeEmpty())
			// Each marks within its monitor period of the deadline; the
			// apiserver keeps upstream's mark in whole seconds.
			g.Expect(*e.Ours.Marked).To(BeTemporally("~", *e.Upstream.Marked, sidePeriod+time.Second))
		}).WithTimeout(sideGrace + 30*time.Second).WithPolling(time.Second).Should(Succeed())

		By("most heartbeats lost at once: upstream taints and evicts, the dry run's partition freeze holds")
		zone0 := f.InZone(f.Zones()[0])
		lost := append(zone0, nodes[3])
		f.Stop(lost...)
		Eventually(func(g Gomega) {
			r := s.report(g)
			expectHeldFrozen(g, r, lost)
			g.Expect(r.Summary.TaintedUpstreamHeld).To(HaveKeyWithValue(disruption.HeldFrozen, len(lost)))
		}).WithTimeout(sideGrace + 40*time.Second).WithPolling(time.Second).Should(Succeed())
		Eventually(func(g Gomega) string { return s.compare(g, "text") }).Should(
			ContainSubstring("ours held it: " + disruption.HeldFrozen))
		AddReportEntry("compare", s.compare(Default, "text"))

		By("nothing on any Node or Pod written by the dry run")
		s.expectNothingWritten(sideUserAgent)
	})
})

var _ = Describe("A dry-run process beside kube-controller-manager", Label("upstream"), func() {
	It("records each flap of a node as an episode, keeps its comparison through a SIGKILL mid-partition, and holds when every node dies at once", func() {
		s := startSidePlane()
		f := s.startFleet()
		zone0, zone1 := f.InZone(f.Zones()[0]), f.InZone(f.Zones()[1])
		Expect(zone1).To(HaveLen(3))
		flapper, steady := zone1[0], zone1[1]
		id := rand.String(4)
		dry := s.startDryRunProcess("a-" + id)
		Eventually(s.dryRunLeader).ShouldNot(BeEmpty())

		By("a node flapping: each silence past its grace is an episode both mark, ended when it is back")
		for i := 1; i <= 2; i++ {
			f.Stop(flapper)
			Eventually(func(g Gomega) {
				es := episodesOf(s.report(g), flapper)
				g.Expect(es).To(HaveLen(i))
				expectMarkedByBoth(g, es[i-1])
			}).WithTimeout(sideGrace + 30*time.Second).WithPolling(time.Second).Should(Succeed())
			f.Resume(flapper)
			Eventually(func(g Gomega) {
				g.Expect(episodesOf(s.report(g), flapper)[i-1].Ended).NotTo(BeNil())
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		}

		By("four of six nodes silent: upstream taints and evicts, the dry run's freeze holds")
		lost := append(slices.Clone(zone0), steady)
		f.Stop(lost...)
		heldFrozen := func(g Gomega) { expectHeldFrozen(g, s.report(g), lost) }
		Eventually(heldFrozen).WithTimeout(sideGrace + 40*time.Second).WithPolling(time.Second).Should(Succeed())

		By("the dry run SIGKILLed mid-partition, a new process taking over from the record it kept")
		was := s.dryRunLeader(Default)
		dry.Kill()
		s.startDryRunProcess("b-" + id)
		Eventually(s.dryRunLeader).WithTimeout(leaseDuration + 20*time.Second).ShouldNot(Or(BeEmpty(), Equal(was)))
		// The new process sees the taints upstream added; had it taken them
		// for its own, its freeze would take them off, and it would say so.
		Consistently(func(g Gomega) {
			heldFrozen(g)
			g.Expect(s.dryRunTaintEvents(g, lost)).To(BeEmpty())
		}).WithTimeout(sideGrace + 2*time.Second).WithPolling(time.Second).Should(Succeed())

		By("the partition healed: every episode ends, with what the killed process recorded in it")
		f.Resume(lost...)
		Eventually(func(g Gomega) {
			r := s.report(g)
			for _, n := range lost {
				e := episodeOf(g, r, n)
				g.Expect(e.Ended).NotTo(BeNil(), "the episode of %s has not ended", n)
				g.Expect(e.Ours.Marked).NotTo(BeNil(), "the mark of %s the killed process recorded is lost", n)
				g.Expect(e.EvictionsHeld).To(Equal(disruption.HeldFrozen))
			}
		}).WithTimeout(40 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("every node dying at once: both mark every node, the dry run holds, and upstream keeps no taint the comparison does not show held")
		all := f.Nodes()
		f.Stop(all...)
		Eventually(func(g Gomega) {
			r := s.report(g)
			for _, n := range all {
				e := episodeOf(g, r, n)
				g.Expect(e.Ended).To(BeNil(), "no new episode of %s", n)
				expectMarkedByBoth(g, e)
			}
		}).WithTimeout(sideGrace + 40*time.Second).WithPolling(time.Second).Should(Succeed())
		// Past the pods' toleration, a dry run that meant to taint or
		// evict would have said so.
		Consistently(func(g Gomega) {
			r := s.report(g)
			for _, n := range all {
				e := episodeOf(g, r, n)
				g.Expect(e.Ours.NoExecute).To(BeEmpty(), "the dry run tainted %s", n)
				g.Expect(e.Ours.Evicted).To(BeZero(), "the dry run evicted from %s", n)
			}
		}).WithTimeout(sideGrace).WithPolling(time.Second).Should(Succeed())
		// kube-controller-manager takes its NoExecute taints off when it
		// finds every zone down, judging by the Nodes it listed at the
		// start of that monitor pass: a taint it added to a zone that went
		// down a pass earlier can land after the list and stay. Whatever
		// stays, the comparison must show upstream's and the dry run's hold.
		nodes := &corev1.NodeList{}
		Expect(s.k8s.List(context.Background(), nodes)).To(Succeed())
		r := s.report(Default)
		for i := range nodes.Items {
			for _, t := range nodes.Items[i].Spec.Taints {
				if t.Effect != corev1.TaintEffectNoExecute ||
					t.Key != corev1.TaintNodeUnreachable && t.Key != corev1.TaintNodeNotReady {
					continue
				}
				e := episodeOf(Default, r, nodes.Items[i].Name)
				Expect(e.Upstream.NoExecute).NotTo(BeEmpty(), "%s on %s is missing from the comparison", t.Key, nodes.Items[i].Name)
				Expect(e.NoExecuteHeld).NotTo(BeEmpty(), "upstream's %s on %s is not shown held by the dry run", t.Key, nodes.Items[i].Name)
				AddReportEntry("upstream kept a NoExecute taint with every zone down",
					nodes.Items[i].Name+": "+t.Key+"; ours held it: "+e.NoExecuteHeld)
			}
		}
		AddReportEntry("compare", s.compare(Default, "text"))

		By("nothing on any Node or Pod written by either dry-run process")
		s.expectNothingWritten("node-lifecycle-controller")
	})
})
