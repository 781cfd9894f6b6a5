// Package outside is a module of its own that uses node-lifecycle-controller
// as any other module would: through its public packages only. It builds a
// manager with controllers.NewManager, runs a simulated fleet and a
// stand-alone reporter (as a node agent would embed it) against envtest, and
// checks that the agent's node goes Unknown when it stops and recovers when
// it comes back.
package outside

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/reporter"
)

func TestFromOutside(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	testEnv := &envtest.Environment{}
	cfg, err := testEnv.Start()
	g.Expect(err).NotTo(HaveOccurred(), "start envtest (is KUBEBUILDER_ASSETS set?)")
	defer func() { g.Expect(testEnv.Stop()).To(Succeed()) }()

	// The controllers, in a manager whose cache the caller narrows to its
	// own namespace: NewManager keeps that and adds the node Leases and
	// every pod, which the controllers need.
	opts := options.Default()
	opts.NodeMonitorGracePeriod = 2 * time.Second
	opts.NodeStartupGracePeriod = 3 * time.Second
	opts.NodeMonitorPeriod = time.Second
	opts.PodEvictionTimeout = 10 * time.Second
	g.Expect(opts.Validate()).To(Succeed())
	mgr, err := controllers.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{"team-a": {}}},
	}, opts)
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() { stopMgr(); g.Expect(<-mgrDone).To(Succeed()) }()

	// A fleet of three simulated nodes.
	f, err := fleet.Start(ctx, cfg, fleet.Options{Nodes: 3, LeaseDurationSeconds: 2, NodeStatusUpdateFrequency: time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()

	// A node agent's own reporter, with a client of its own.
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := reporter.New(cs, clock.RealClock{}, reporter.Config{
		NodeName:                  "agent-0",
		LeaseDurationSeconds:      2,
		NodeStatusUpdateFrequency: time.Second,
	})
	g.Expect(err).NotTo(HaveOccurred())
	agentCtx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan error, 1)
	go func() { agentDone <- r.Run(agentCtx) }()
	defer func() { stopAgent(); <-agentDone }()

	// The fleet's waits read any node, the agent's too.
	waitReady := func(node string, status corev1.ConditionStatus) {
		t.Helper()
		g.Expect(f.WaitFor(ctx, node, fleet.ReadyIs(status))).To(Succeed(), "node %s never Ready=%s", node, status)
	}
	waitReady("agent-0", corev1.ConditionTrue)

	// The agent stops: its node goes Unknown; the fleet's stay Ready.
	r.Pause()
	waitReady("agent-0", corev1.ConditionUnknown)
	for _, node := range f.Nodes() {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fleet.ReadyIs(corev1.ConditionTrue)(n)).To(BeTrue(), "fleet node %s not Ready", node)
	}
	// It comes back and its node recovers.
	r.Resume()
	waitReady("agent-0", corev1.ConditionTrue)

	// A fleet node stops and recovers the same way.
	f.Stop(f.Nodes()[0])
	waitReady(f.Nodes()[0], corev1.ConditionUnknown)
	f.Resume(f.Nodes()[0])
	waitReady(f.Nodes()[0], corev1.ConditionTrue)
}
