package lifecycletest_test

// This file is the Ginkgo example in docs/go.md's "Real node lifecycle in
// your envtest suite": a suite whose BeforeSuite starts envtest with the
// project's CRDs and one environment for every spec, its nodes shaped in
// two pools.

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/lifecycletest"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

func TestGinkgoSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lifecycletest in a Ginkgo suite")
}

var env *lifecycletest.Env

var _ = BeforeSuite(func(ctx SpecContext) {
	crds, err := lifecycletest.CRDs()
	Expect(err).NotTo(HaveOccurred())
	// kube-apiserver and etcd from $KUBEBUILDER_ASSETS, serving
	// NodeHealthPolicies from the start.
	testEnv := &envtest.Environment{CRDs: crds}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "start envtest (is KUBEBUILDER_ASSETS set? make test sets it)")
	DeferCleanup(testEnv.Stop)

	// Two pools: GPU nodes, labeled and tainted as a cluster's would be,
	// over two zones; and general workers.
	env, err = lifecycletest.Start(ctx, cfg, lifecycletest.Options{Pools: []fleet.Pool{
		{Name: "gpu", Nodes: 2, Zones: 2, Labels: map[string]string{"nvidia.com/gpu.present": "true"},
			Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "general", Nodes: 3, Zones: 2},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Close)
})

var _ = Describe("A worker whose kubelet dies", func() {
	It("is marked Unknown and tainted NoExecute, and recovers when it reports again", func(ctx SpecContext) {
		node := env.Pool("general")[0]
		env.Stop(node)
		Eventually(ctx, env.Ready(node)).Should(Equal(corev1.ConditionUnknown))
		Eventually(ctx, env.Taints(node, corev1.TaintEffectNoExecute)).Should(ContainElement(corev1.TaintNodeUnreachable))

		env.Resume(node)
		Eventually(ctx, env.Ready(node)).Should(Equal(corev1.ConditionTrue))
		Eventually(ctx, env.Taints(node, corev1.TaintEffectNoExecute)).Should(BeEmpty())
	})

	It("leaves the GPU nodes alone", func(ctx context.Context) {
		for _, n := range env.Pool("gpu") {
			Expect(env.Ready(n)(ctx)).To(Equal(corev1.ConditionTrue))
			Expect(env.Taints(n, corev1.TaintEffectNoSchedule)(ctx)).To(ContainElement("nvidia.com/gpu"))
		}
	})
})
