package lifecycletest_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/lifecycletest"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// startAPIServer starts an apiserver from KUBEBUILDER_ASSETS until the test
// ends, with the project's CRDs if crds, and returns its config.
func startAPIServer(t *testing.T, crds bool) *rest.Config {
	t.Helper()
	env := &envtest.Environment{}
	if crds {
		all, err := lifecycletest.CRDs()
		if err != nil {
			t.Fatal(err)
		}
		env.CRDs = all
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("Start envtest (is KUBEBUILDER_ASSETS set? make test sets it): %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stop envtest: %v", err)
		}
	})
	return cfg
}

// policyClient returns a client of cfg that knows NodeHealthPolicies.
func policyClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTwoEnvironmentsInOneBinary runs two environments at once, each on
// its own apiserver, in one test binary: controller-runtime refuses a
// second controller of the same name in a process unless told not to
// check, and each environment judges its own nodes only.
func TestTwoEnvironmentsInOneBinary(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	envs := make([]*lifecycletest.Env, 2)
	for i := range envs {
		env, err := lifecycletest.Start(ctx, startAPIServer(t, false), lifecycletest.Options{Nodes: 2})
		g.Expect(err).NotTo(HaveOccurred(), "environment %d", i)
		t.Cleanup(func() { g.Expect(env.Close()).To(Succeed()) })
		envs[i] = env
	}
	// The first node dies on the first apiserver, the second on the second.
	first, second := envs[0].Nodes()[0], envs[1].Nodes()[1]
	envs[0].Stop(first)
	envs[1].Stop(second)
	g.Eventually(ctx, envs[0].Ready(first)).Should(Equal(corev1.ConditionUnknown))
	g.Eventually(ctx, envs[1].Ready(second)).Should(Equal(corev1.ConditionUnknown))
	g.Consistently(ctx, envs[0].Ready(envs[0].Nodes()[1])).WithTimeout(3 * time.Second).Should(Equal(corev1.ConditionTrue))
	g.Consistently(ctx, envs[1].Ready(envs[1].Nodes()[0])).WithTimeout(time.Second).Should(Equal(corev1.ConditionTrue))
}

// TestShapedPoolsFollowTheirPolicy shapes the nodes into two pools, one
// labeled and tainted as a GPU pool, and gives that pool a policy with a
// grace period of an hour: a GPU node that goes silent stays Ready while a
// general node is marked at the suite's 2s.
func TestShapedPoolsFollowTheirPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cfg := startAPIServer(t, true)
	c := policyClient(t, cfg)

	gpuTaint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	policy := &v1alpha1.NodeHealthPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: v1alpha1.NodeHealthPolicySpec{
			NodeSelector:           metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}},
			NodeMonitorGracePeriod: &metav1.Duration{Duration: time.Hour},
			PodEvictionTimeout:     &metav1.Duration{Duration: 2 * time.Hour},
		},
	}
	g.Expect(c.Create(ctx, policy)).To(Succeed())

	env, err := lifecycletest.Start(ctx, cfg, lifecycletest.Options{Pools: []fleet.Pool{
		{Name: "gpu", Nodes: 2, Zones: 2, Labels: map[string]string{"pool": "gpu"}, Taints: []corev1.Taint{gpuTaint}},
		{Name: "general", Nodes: 2, NamePrefix: "worker-"},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Close()).To(Succeed()) }()

	gpu, general := env.Pool("gpu"), env.Pool("general")
	g.Expect(gpu).To(Equal([]string{"gpu-0000", "gpu-0001"}))
	g.Expect(general).To(Equal([]string{"worker-0000", "worker-0001"}))
	g.Expect(env.Zone(gpu[0])).NotTo(Equal(env.Zone(gpu[1])))
	g.Expect(env.Taints(gpu[0], corev1.TaintEffectNoSchedule)(ctx)).To(ContainElement("dedicated"))
	g.Expect(env.Taints(general[0], corev1.TaintEffectNoSchedule)(ctx)).NotTo(ContainElement("dedicated"))
	// The policy selects the GPU pool, and only it.
	g.Eventually(ctx, func(ctx context.Context) (int32, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(policy), policy)
		return policy.Status.Nodes, err
	}).Should(Equal(int32(2)))

	env.Stop(gpu[0], general[0])
	g.Eventually(ctx, env.Ready(general[0])).Should(Equal(corev1.ConditionUnknown))
	g.Consistently(ctx, env.Ready(gpu[0])).WithTimeout(3 * time.Second).Should(Equal(corev1.ConditionTrue))
}

// TestInstallCRDs installs the CRDs on an apiserver started without them,
// which then serves NodeHealthPolicies.
func TestInstallCRDs(t *testing.T) {
	g := NewWithT(t)
	cfg := startAPIServer(t, false)
	c := policyClient(t, cfg)
	policy := &v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: "all"}}
	g.Expect(c.Create(t.Context(), policy.DeepCopy())).NotTo(Succeed(), "the apiserver served NodeHealthPolicies before their CRD")

	g.Expect(lifecycletest.InstallCRDs(cfg)).To(Succeed())
	g.Expect(c.Create(t.Context(), policy.DeepCopy())).To(Succeed())
	// Again, as a second suite in the same binary would: an update.
	g.Expect(lifecycletest.InstallCRDs(cfg)).To(Succeed())
}
