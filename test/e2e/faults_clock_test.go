package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// aheadClock is the clock of a host whose wall clock runs ahead of the
// others'.
type aheadClock struct {
	clock.RealClock
	by time.Duration
}

func (c aheadClock) Now() time.Time                  { return time.Now().Add(c.by) }
func (c aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

var _ = Describe("Clock skew across a failover", Label("faults"), func() {
	It("evicts no pod early when the new leader's clock runs ten minutes ahead", func() {
		const (
			skew    = 10 * time.Minute
			timeout = 20 * time.Second
		)
		leaseName := "node-lifecycle-controller-" + rand.String(5)
		DeferCleanup(func() {
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: leaseName}}
			Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), lease))).To(Succeed())
		})
		timing := func(o *options.Options) { o.PodEvictionTimeout = timeout }

		By("a leader with the right time tainting a dead node")
		leader := startReplica("on-time", leaseName, timing)
		Eventually(func() bool { return elected(leader) }).Should(BeTrue())
		standby := startReplica("ahead", leaseName, timing, func(o *options.Options) { o.Clock = aheadClock{by: skew} })
		liveNode()
		dead := newNodeName()
		createNode(dead, corev1.ConditionTrue)
		createLease(dead)
		byTimeout := createPod("skew-"+rand.String(5), dead)
		byToleration := createPod("skew-"+rand.String(5), dead, tolerateUnreachable(ptr.To(int64(timeout/time.Second))))
		added := noExecuteAdded(dead, corev1.TaintNodeUnreachable)

		By("the leader dying, and the replica ten minutes ahead taking over")
		leader.kill()
		Eventually(func() bool { return elected(standby) }).WithTimeout(2 * leaseDuration).Should(BeTrue())
		due := added.Add(timeout)
		Expect(time.Until(due)).To(BeNumerically(">", 3*time.Second), "the handover took too long to test the countdown")
		Consistently(func(g Gomega) {
			for _, pod := range []*corev1.Pod{byTimeout, byToleration} {
				g.Expect(deleted(pod)(g)).To(BeFalse(), "pod %s evicted before its deadline %v", pod.Name, due)
			}
		}).WithTimeout(time.Until(due) - time.Second).Should(Succeed())

		By("the pods going at their deadline all the same")
		for _, pod := range []*corev1.Pod{byTimeout, byToleration} {
			Eventually(deleted(pod)).WithTimeout(time.Until(due)+3*time.Second).Should(BeTrue(),
				"pod %s outlived its deadline %v", pod.Name, due)
		}
	})
})
