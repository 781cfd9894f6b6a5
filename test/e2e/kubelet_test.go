package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/status"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// kubeletGrace is the grace period of the specs on hollow kubelets: their
// Lease is renewed every 10s and cannot be set shorter, so 30s lets two
// renewals go missing before a live kubelet would be marked.
const kubeletGrace = 30 * time.Second

// kubeletTimings are the controller's timings for hollow kubelets: their
// grace, and the startup grace and eviction timeout, which must be longer
// than it. No pod of these specs waits for the eviction timeout.
func kubeletTimings(o *options.Options) {
	o.NodeMonitorGracePeriod = kubeletGrace
	o.NodeStartupGracePeriod = 2 * kubeletGrace
	o.PodEvictionTimeout = 2 * kubeletGrace
	o.PartitionFreezeCooldown = kubeletGrace
}

// staticPodFile is the project's static pod, as kubeadm's kubelet would
// read it from /etc/kubernetes/manifests.
var staticPodFile = filepath.Join("..", "..", "config", "static-pod", "node-lifecycle-controller.yaml")

// startHollowKubelets starts a real kubelet (kubemark's hollow node) for
// each name, in one zone, and returns once each has registered Ready. The
// spec's end kills them and deletes what they registered.
func startHollowKubelets(zone string, names ...string) []*harness.HollowKubelet {
	GinkgoHelper()
	return startHollowKubeletsOn(testEnv, k8s, zone, names...)
}

// startHollowKubeletsOn is startHollowKubelets on the control plane of env,
// which c reaches. What they registered is deleted at the spec's end only
// from the suite's own control plane: another is stopped whole.
func startHollowKubeletsOn(env *envtest.Environment, c client.Client, zone string, names ...string) []*harness.HollowKubelet {
	GinkgoHelper()
	binary, err := harness.KubemarkBinary(filepath.Join("..", "..", "bin", "kubemark"))
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	cfg := harness.HollowKubeletConfig{
		Binary:     binary,
		Kubeconfig: writeKubeconfigOn(env, "hollow-kubelets"),
		Dir:        dir,
		Region:     "region-" + zone,
		Zone:       zone,
	}
	kubelets := make([]*harness.HollowKubelet, 0, len(names))
	for _, name := range names {
		k, err := harness.StartHollowKubelet(context.Background(), cfg, name)
		Expect(err).NotTo(HaveOccurred())
		kubelets = append(kubelets, k)
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				printLogTail(k)
			}
			k.Close()
			if env == testEnv {
				forgetKubelet(name)
			}
		})
	}
	for _, k := range kubelets {
		Eventually(func(g Gomega) corev1.ConditionStatus {
			node := &corev1.Node{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Name: k.Name}, node)).To(Succeed())
			ready := condition(node, corev1.NodeReady)
			g.Expect(ready).NotTo(BeNil())
			return ready.Status
		}).WithTimeout(time.Minute).Should(Equal(corev1.ConditionTrue), "node %s", k.Name)
	}
	return kubelets
}

// printLogTail prints the end of the kubelet's log to the spec's output.
func printLogTail(k *harness.HollowKubelet) {
	out, err := os.ReadFile(k.LogPath())
	if err != nil {
		GinkgoWriter.Printf("log of hollow kubelet %s: %v\n", k.Name, err)
		return
	}
	lines := strings.Split(string(out), "\n")
	GinkgoWriter.Printf("=== the last lines of hollow kubelet %s's log (%s)\n%s\n", k.Name, k.LogPath(),
		strings.Join(lines[max(0, len(lines)-60):], "\n"))
}

// forgetKubelet deletes what a kubelet registered, its pods first, so that
// the specs after this one on the same control plane find no dead node.
func forgetKubelet(name string) {
	ctx := context.Background()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.MatchingFields{"spec.nodeName": name})).To(Succeed())
	for i := range pods.Items {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)))).To(Succeed())
	}
	for _, obj := range []client.Object{
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name}},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
	} {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
	}
}

// createKubeletPod binds a pod to a hollow kubelet's node, which runs it. It
// mounts no service account token: the kubelet would wait for the
// kube-root-ca.crt ConfigMap, which no controller publishes here.
func createKubeletPod(name, node string, tolerations ...corev1.Toleration) *corev1.Pod {
	GinkgoHelper()
	return createKubeletPodOn(k8s, name, node, tolerations...)
}

// createKubeletPodOn is createKubeletPod through c.
func createKubeletPodOn(c client.Client, name, node string, tolerations ...corev1.Toleration) *corev1.Pod {
	GinkgoHelper()
	pod := harness.KubeletPod(metav1.NamespaceDefault, name, node, nil, tolerations...)
	Expect(c.Create(context.Background(), pod)).To(Succeed())
	return pod
}

// kubeletPods reads the pods a kubelet runs from its own API, as it sees
// them: for a static pod, the manifest as it read it.
func kubeletPods(k *harness.HollowKubelet) (*corev1.PodList, error) {
	resp, err := http.Get(k.URL("/pods")) //nolint:noctx // a loopback test server
	if err != nil {
		return nil, fmt.Errorf("get the pods of kubelet %s: %w", k.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get the pods of kubelet %s: %s: %s: %w", k.Name, resp.Status, body, err)
	}
	pods := &corev1.PodList{}
	if err := json.Unmarshal(body, pods); err != nil {
		return nil, fmt.Errorf("decode the pods of kubelet %s: %w", k.Name, err)
	}
	return pods, nil
}

// terminating reports whether the pod is still there, deleted but not gone:
// what an evicted pod stays while no kubelet is left to finish it.
func terminating(pod *corev1.Pod) func(g Gomega) bool {
	return func(g Gomega) bool {
		got := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)).To(Succeed())
		return got.DeletionTimestamp != nil
	}
}

// heartbeats watches a node as the controller does, and keeps when it saw
// each heartbeat: a change of the Lease's renewTime, or of the Ready
// condition's heartbeat time. It also keeps when it first saw Ready
// Unknown. It polls every 50ms until the spec ends.
type heartbeats struct {
	mu       sync.Mutex
	renewals []time.Time // when each Lease renewal was seen
	last     time.Time   // when the last heartbeat of either kind was seen
	marked   time.Time   // when Ready was first seen Unknown
}

func watchHeartbeats(name string) *heartbeats {
	h := &heartbeats{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		var renewTime *metav1.MicroTime
		var statusBeat metav1.Time
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			lease := &coordinationv1.Lease{}
			leaseErr := k8s.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: name}, lease)
			node := &corev1.Node{}
			nodeErr := k8s.Get(ctx, client.ObjectKey{Name: name}, node)
			seen := time.Now()
			h.mu.Lock()
			if leaseErr == nil && lease.Spec.RenewTime != nil && (renewTime == nil || !lease.Spec.RenewTime.Equal(renewTime)) {
				renewTime = lease.Spec.RenewTime
				h.renewals = append(h.renewals, seen)
				h.last = seen
			}
			if c := condition(node, corev1.NodeReady); nodeErr == nil && c != nil {
				if c.Status == corev1.ConditionUnknown {
					if h.marked.IsZero() {
						h.marked = seen
					}
				} else if !c.LastHeartbeatTime.Equal(&statusBeat) {
					statusBeat = c.LastHeartbeatTime
					h.last = seen
				}
			}
			h.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	DeferCleanup(func() {
		cancel()
		<-done
	})
	return h
}

// renewalCount is how many Lease renewals have been seen.
func (h *heartbeats) renewalCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.renewals)
}

// snapshot returns the renewals seen, the last heartbeat and the mark.
func (h *heartbeats) snapshot() (renewals []time.Time, last, marked time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.renewals...), h.last, h.marked
}

var _ = Describe("Real kubelets", Label("kubelet"), func() {
	It("runs the project's static pod, whose mirror pod in kube-system has what kubeadm's kube-controller-manager has", func() {
		manifest, err := os.ReadFile(staticPodFile)
		Expect(err).NotTo(HaveOccurred())
		want := &corev1.Pod{}
		Expect(yaml.UnmarshalStrict(manifest, want)).To(Succeed())

		k := startHollowKubelets("zone-static", newNodeName())[0]
		Expect(k.AddStaticPod("node-lifecycle-controller.yaml", manifest)).To(Succeed())

		By("the kubelet accepting the manifest and the apiserver its mirror pod, named after the node")
		mirror := &corev1.Pod{}
		key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: want.Name + "-" + k.Name}
		Eventually(func(g Gomega) {
			refusals, err := k.StaticPodRefusals()
			g.Expect(err).NotTo(HaveOccurred())
			if len(refusals) > 0 {
				StopTrying("the kubelet refused the static pod").Attach("its log", refusals).Now()
			}
			g.Expect(k8s.Get(context.Background(), key, mirror)).To(Succeed())
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(mirror.Annotations).To(HaveKey(corev1.MirrorPodAnnotationKey))
		Expect(mirror.OwnerReferences).To(ContainElement(And(HaveField("Kind", "Node"), HaveField("Name", k.Name))))
		Expect(mirror.Spec.NodeName).To(Equal(k.Name))

		By("keeping what kubeadm's kube-controller-manager has: priority, host network, seccomp, probes, requests, host path mounts")
		Expect(mirror.Spec.PriorityClassName).To(Equal("system-node-critical"))
		class := &schedulingv1.PriorityClass{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Name: mirror.Spec.PriorityClassName}, class)).To(Succeed())
		Expect(mirror.Spec.Priority).To(HaveValue(Equal(class.Value)))
		Expect(mirror.Spec.HostNetwork).To(BeTrue())
		Expect(mirror.Spec.SecurityContext.SeccompProfile).To(Equal(want.Spec.SecurityContext.SeccompProfile))
		Expect(mirror.Spec.Containers).To(HaveLen(1))
		got, wantCtr := mirror.Spec.Containers[0], want.Spec.Containers[0]
		Expect(got.Image).To(Equal(wantCtr.Image))
		Expect(got.Command).To(Equal(wantCtr.Command))
		Expect(got.Resources.Requests).To(Equal(wantCtr.Resources.Requests))
		Expect(got.SecurityContext).To(Equal(wantCtr.SecurityContext))
		for _, p := range []struct {
			name      string
			got, want *corev1.Probe
		}{
			{"liveness", got.LivenessProbe, wantCtr.LivenessProbe},
			{"readiness", got.ReadinessProbe, wantCtr.ReadinessProbe},
			{"startup", got.StartupProbe, wantCtr.StartupProbe},
		} {
			Expect(p.want).NotTo(BeNil(), "the manifest has no %s probe", p.name)
			defaulted := p.want.DeepCopy()
			if defaulted.SuccessThreshold == 0 {
				defaulted.SuccessThreshold = 1
			}
			Expect(p.got).To(Equal(defaulted), "%s probe", p.name)
		}
		Expect(got.VolumeMounts).To(Equal(wantCtr.VolumeMounts))
		Expect(mirror.Spec.Volumes).To(Equal(want.Spec.Volumes))

		By("running it: the kubelet reports the pod Running through its mirror pod")
		Eventually(func(g Gomega) corev1.PodPhase {
			g.Expect(k8s.Get(context.Background(), key, mirror)).To(Succeed())
			return mirror.Status.Phase
		}).WithTimeout(time.Minute).Should(Equal(corev1.PodRunning))
		refusals, err := k.StaticPodRefusals()
		Expect(err).NotTo(HaveOccurred())
		Expect(refusals).To(BeEmpty())
	})

	// The kubelet resolves no priority class for a static pod: one that
	// names a class but sets no priority runs at priority 0 in the kubelet's
	// own eyes (its node-pressure eviction ranking, graceful shutdown by
	// priority), whatever the apiserver gives its mirror pod, and the kubelet
	// logs "Static pod has priorityClassName and nil priority". kubeadm's
	// manifests set both, and so does config/static-pod.
	It("has the kubelet run the static pod at kubeadm's priority, as it reads it, not only its mirror pod", func() {
		manifest, err := os.ReadFile(staticPodFile)
		Expect(err).NotTo(HaveOccurred())
		want := &corev1.Pod{}
		Expect(yaml.UnmarshalStrict(manifest, want)).To(Succeed())
		class := &schedulingv1.PriorityClass{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Name: want.Spec.PriorityClassName}, class)).To(Succeed())

		k := startHollowKubelets("zone-static", newNodeName())[0]
		Expect(k.AddStaticPod("node-lifecycle-controller.yaml", manifest)).To(Succeed())
		Eventually(func(g Gomega) *int32 {
			pods, err := kubeletPods(k)
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range pods.Items {
				if p.Name == want.Name+"-"+k.Name {
					return p.Spec.Priority
				}
			}
			g.Expect(pods.Items).To(ContainElement(HaveField("Name", want.Name+"-"+k.Name)), "the kubelet runs no static pod")
			return nil
		}).WithTimeout(time.Minute).Should(HaveValue(Equal(class.Value)))
	})

	It("marks a killed kubelet at the grace after its last heartbeat, taints it and evicts its pods, which stay Terminating", func() {
		zone := "zone-" + newNodeName()
		kubelets := startHollowKubelets(zone, newNodeName(), newNodeName())
		live, dead := kubelets[0], kubelets[1]
		beats := watchHeartbeats(dead.Name)
		startController(kubeletTimings)

		short := createKubeletPod(dead.Name+"-short", dead.Name, tolerateUnreachable(ptr.To[int64](2)))
		forever := createKubeletPod(dead.Name+"-forever", dead.Name, tolerateUnreachable(nil))
		stays := createKubeletPod(live.Name+"-stays", live.Name)
		for _, pod := range []*corev1.Pod{short, forever, stays} {
			Eventually(podReadyStatus(pod)).WithTimeout(time.Minute).Should(Equal(corev1.ConditionTrue), "pod %s", pod.Name)
		}

		By("renewing its Lease every 10s, as kubemark's kubelet does")
		// The first is the Lease as the watch found it, not a renewal. The
		// kubelet may post Ready before it has a Lease at all.
		Eventually(beats.renewalCount).WithTimeout(5 * harness.KubeletLeaseRenewInterval).Should(BeNumerically(">=", 4))
		lease := &coordinationv1.Lease{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: dead.Name}, lease)).To(Succeed())
		Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(harness.KubeletLeaseDuration / time.Second)))
		Expect(lease.Spec.HolderIdentity).To(HaveValue(Equal(dead.Name)))
		renewals, _, _ := beats.snapshot()
		for i := 2; i < len(renewals); i++ {
			// 10s, 4% jitter, and the write and this poll's delays.
			Expect(renewals[i].Sub(renewals[i-1])).To(BeNumerically("~", harness.KubeletLeaseRenewInterval, 1500*time.Millisecond),
				"renewal %d of %v", i, renewals)
		}

		By("being marked Unknown at the grace period after the last heartbeat it sent before it was killed")
		// Killed halfway between two renewals, so that a deadline counted
		// from the kill, or from the Lease's own duration, would show.
		Eventually(func() time.Duration { _, last, _ := beats.snapshot(); return time.Since(last) }).
			WithTimeout(harness.KubeletLeaseRenewInterval).Should(BeNumerically(">=", harness.KubeletLeaseRenewInterval/2))
		dead.Kill()
		killed := time.Now()
		Eventually(readyStatus(dead.Name)).WithTimeout(kubeletGrace + 10*time.Second).Should(Equal(markedUnknown))
		Eventually(func() time.Time { _, _, marked := beats.snapshot(); return marked }).ShouldNot(BeZero())
		_, last, marked := beats.snapshot()
		GinkgoWriter.Printf("last heartbeat seen %s, killed %v after it, marked %v after it (grace %v)\n",
			last.Format(time.StampMilli), killed.Sub(last), marked.Sub(last), kubeletGrace)
		Expect(last).To(BeTemporally("<", killed))
		Expect(marked.Sub(last)).To(BeNumerically(">=", kubeletGrace-500*time.Millisecond), "marked before its deadline")
		Expect(marked.Sub(last)).To(BeNumerically("<=", kubeletGrace+2*time.Second), "marked late")
		Eventually(noScheduleTaints(dead.Name)).Should(ConsistOf(unreachableTaint))

		By("tainting it NoExecute and marking its pods NotReady: no kubelet is left to say otherwise")
		added := noExecuteAdded(dead.Name, corev1.TaintNodeUnreachable)
		for _, pod := range []*corev1.Pod{short, forever} {
			Eventually(podReadyStatus(pod)).Should(Equal(corev1.ConditionFalse), "pod %s", pod.Name)
		}

		By("evicting a pod at its toleration's end; it stays Terminating, for no kubelet finishes it")
		Consistently(terminating(short)).WithTimeout(time.Until(added.Add(2*time.Second)) - 100*time.Millisecond).Should(BeFalse())
		Eventually(terminating(short)).WithTimeout(5 * time.Second).Should(BeTrue())
		Consistently(terminating(short)).WithTimeout(3 * time.Second).Should(BeTrue())
		got := &corev1.Pod{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(short), got)).To(Succeed())
		Expect(got.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.DisruptionTarget),
			HaveField("Reason", "DeletionByTaintManager"),
		)))
		Expect(terminating(forever)(Default)).To(BeFalse(), "a pod that tolerates unreachable for ever was evicted")

		By("saying so: the controller's events, and the status report")
		Eventually(reasonsFrom(nodehealth.EventSource, "Node", dead.Name)).Should(ContainElement(nodehealth.ReasonNodeNotReady))
		Eventually(reasonsFrom(podeviction.EventSource, "Pod", short.Name)).Should(ContainElement(podeviction.ReasonTaintManagerEviction))
		opts := options.Default()
		kubeletTimings(&opts)
		in, err := status.Gather(context.Background(), k8s, policy.Defaults(opts), time.Now())
		Expect(err).NotTo(HaveOccurred())
		report := status.Build(in)
		Expect(report.Zones).To(ContainElement(And(HaveField("Name", "region-"+zone+"/"+zone),
			HaveField("State", "Normal"), HaveField("Ready", 1), HaveField("NotReady", 1))))
		Expect(report.Unhealthy).To(ContainElement(And(
			HaveField("Name", dead.Name),
			HaveField("Verdict", "Unreachable"),
			HaveField("Reason", "NodeStatusUnknown"),
			HaveField("Held", BeEmpty()),
			// The evicted pod is Terminating, and the report lists only
			// the pods still to be decided.
			HaveField("Pods", ConsistOf(And(HaveField("Name", forever.Name), HaveField("DecidedBy", "ToleratedForever")))),
		)))
		Expect(report.Unhealthy).NotTo(ContainElement(HaveField("Name", live.Name)))

		By("leaving the live kubelet, its node and its pod alone")
		Expect(readyStatus(live.Name)(Default)).To(HavePrefix("True/"))
		Expect(getNode(live.Name).Spec.Taints).To(BeEmpty())
		Expect(podReadyStatus(stays)(Default)).To(Equal(corev1.ConditionTrue))
		Expect(terminating(stays)(Default)).To(BeFalse())
	})
})
