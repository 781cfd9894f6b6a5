package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// startFleet runs a fleet with timings to match the suite's grace period:
// Leases of 2s renewed every 500ms, status computed every second, one pod
// per node; tune changes the options further. Its nodes and their pods are
// deleted when the spec ends.
func startFleet(nodes, zones int, tune ...func(*fleet.Options)) *fleet.Fleet {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := fleet.Options{
		Nodes:                     nodes,
		Zones:                     zones,
		NamePrefix:                "fleet-" + rand.String(4) + "-",
		PodsPerNode:               1,
		LeaseDurationSeconds:      2,
		NodeStatusUpdateFrequency: time.Second,
	}
	for _, t := range tune {
		t(&opts)
	}
	f, err := fleet.Start(ctx, cfg, opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		f.Close()
		for _, n := range f.Nodes() {
			deleteNode(n)
		}
		Expect(k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(metav1.NamespaceDefault),
			client.MatchingLabelsSelector{Selector: fleetPodSelector(f)}, client.GracePeriodSeconds(0))).To(Succeed())
	})
	return f
}

// fleetPodSelector selects the pods the fleet bound to its nodes.
func fleetPodSelector(f *fleet.Fleet) labels.Selector {
	req, err := labels.NewRequirement(fleet.PodLabel, selection.In, f.Nodes())
	Expect(err).NotTo(HaveOccurred())
	return labels.NewSelector().Add(*req)
}

var _ = Describe("Simulated fleet", func() {
	It("stays Ready under the controller, goes Unknown when stopped and recovers when resumed", func() {
		startController()
		// The controller's cache drops the images kubelets list: its
		// writes must leave them in the apiserver.
		const images = 5
		f := startFleet(6, 3, func(o *fleet.Options) { o.ImagesPerNode = images })
		Expect(f.Zones()).To(HaveLen(3))

		By("every node staying Ready and untainted on its reporter's heartbeats")
		allClean := func(g Gomega) {
			for _, n := range f.Nodes() {
				g.Expect(readyStatus(n)(g)).To(HavePrefix("True/"))
				// Admission taints a new node not-ready until the controller
				// sees it Ready.
				g.Expect(noScheduleTaints(n)(g)).To(BeEmpty())
			}
		}
		Eventually(allClean).Should(Succeed())
		Consistently(allClean).WithTimeout(2 * grace).Should(Succeed())

		By("a stopped node going Unknown and its pod NotReady")
		dead := f.Nodes()[0]
		f.Stop(dead)
		Eventually(readyStatus(dead)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		Eventually(func() bool { return hasNoExecuteTaint(dead) }).Should(BeTrue())
		Expect(getNode(dead).Status.Images).To(Equal(fleet.Images(images)), "images lost in the mark or the taints")

		By("the node recovering when resumed")
		f.Resume(dead)
		Eventually(readyStatus(dead)).Should(HavePrefix("True/"))
		Eventually(func() []corev1.Taint { return getNode(dead).Spec.Taints }).Should(BeEmpty())
		Expect(getNode(dead).Status.Images).To(Equal(fleet.Images(images)), "images lost in the recovery")
	})

	It("recreates a deleted Lease", func() {
		f := startFleet(1, 1)
		name := f.Nodes()[0]
		key := client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: name}
		lease := &coordinationv1.Lease{}
		Eventually(func() error { return k8s.Get(context.Background(), key, lease) }).Should(Succeed())
		Expect(k8s.Delete(context.Background(), lease)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &coordinationv1.Lease{}
			g.Expect(k8s.Get(context.Background(), key, got)).To(Succeed())
			g.Expect(got.UID).NotTo(Equal(lease.UID))
			g.Expect(got.OwnerReferences).To(ContainElement(HaveField("Name", name)))
		}).Should(Succeed())
	})
})
