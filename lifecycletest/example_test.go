package lifecycletest_test

// This file is the example in docs/go.md's "Real node lifecycle in your
// envtest suite": an envtest suite that needs Nodes which go NotReady and
// come back, and pods evicted from dead nodes, as in a real cluster.

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/lifecycletest"
)

func TestNodeLifecycleInEnvtest(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// kube-apiserver and etcd from $KUBEBUILDER_ASSETS.
	testEnv := &envtest.Environment{}
	cfg, err := testEnv.Start()
	g.Expect(err).NotTo(HaveOccurred(), "start envtest (is KUBEBUILDER_ASSETS set? make test sets it)")
	defer func() { g.Expect(testEnv.Stop()).To(Succeed()) }()

	// The controllers and six nodes in three zones, each running a pod
	// that tolerates an unreachable node for one second.
	env, err := lifecycletest.Start(ctx, cfg, lifecycletest.Options{
		Nodes: 6, Zones: 3, PodsPerNode: 1,
		PodTolerations: []corev1.Toleration{{
			Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1),
		}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Close()).To(Succeed()) }()
	node := env.Nodes()[0]

	// Its kubelet dies: the node goes Unknown, is tainted NoExecute, and
	// its pod is evicted a second later.
	env.Stop(node)
	g.Eventually(ctx, env.Ready(node)).Should(Equal(corev1.ConditionUnknown))
	g.Eventually(ctx, env.Taints(node, corev1.TaintEffectNoExecute)).Should(ContainElement(corev1.TaintNodeUnreachable))
	g.Eventually(ctx, env.Pods(node)).Should(BeZero())

	// It comes back: Ready again, the NoExecute taint gone.
	env.Resume(node)
	g.Eventually(ctx, env.Ready(node)).Should(Equal(corev1.ConditionTrue))
	g.Eventually(ctx, env.Taints(node, corev1.TaintEffectNoExecute)).Should(BeEmpty())
	// The other nodes were never touched.
	for _, other := range env.Nodes()[1:] {
		g.Consistently(ctx, env.Pods(other)).WithTimeout(time.Second).Should(Equal(1))
	}
}
