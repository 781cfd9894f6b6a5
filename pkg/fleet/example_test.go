package fleet_test

// This file is the example in the README's "Real node lifecycle in your
// envtest suite": an operator's envtest suite that needs Nodes which go
// NotReady and come back, and pods that are evicted from dead nodes, as in
// a real cluster. Copy it and replace the last steps with your own.

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

func TestNodeLifecycleInEnvtest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A control plane: kube-apiserver and etcd from $KUBEBUILDER_ASSETS.
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`, which builds kube-apiserver and etcd into bin/")
	}
	env := &envtest.Environment{}
	env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ServiceAccount")
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})

	// The node lifecycle controllers, with seconds where a cluster has
	// minutes. In a suite of your own, add your controllers to this
	// manager.
	opts := controllers.DefaultOptions()
	opts.NodeMonitorGracePeriod = 2 * time.Second
	opts.NodeStartupGracePeriod = 3 * time.Second
	opts.NodeMonitorPeriod = time.Second
	opts.PodEvictionTimeout = 5 * time.Second
	opts.NodeEvictionRate = 10
	mgr, err := controllers.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}, opts)
	if err != nil {
		t.Fatalf("create manager with the controllers: %v", err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stopMgr()
		if err := <-mgrDone; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// Six simulated nodes in three zones, each running one pod that
	// tolerates an unreachable node for one second. Leases of 2s are
	// renewed every 500ms.
	f, err := fleet.Start(ctx, cfg, fleet.Options{
		Nodes: 6, Zones: 3, PodsPerNode: 1,
		LeaseDurationSeconds: 2, NodeStatusUpdateFrequency: time.Second,
		PodTolerations: []corev1.Toleration{{
			Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1),
		}},
	})
	if err != nil {
		t.Fatalf("start fleet: %v", err)
	}
	t.Cleanup(f.Close)
	node := f.Nodes()[0]

	// Its kubelet dies: the node goes Unknown, is tainted NoExecute, and
	// its pod is evicted a second later.
	f.Stop(node)
	if err := f.WaitFor(ctx, node, fleet.ReadyIs(corev1.ConditionUnknown)); err != nil {
		t.Fatalf("node %s never went Unknown: %v", node, err)
	}
	if err := f.WaitFor(ctx, node, hasNoExecute); err != nil {
		t.Fatalf("node %s was never tainted NoExecute: %v", node, err)
	}
	waitForPods(ctx, t, f, node, 0)

	// It comes back: Ready again, the NoExecute taint gone at once.
	f.Resume(node)
	if err := f.WaitFor(ctx, node, func(n *corev1.Node) bool {
		return fleet.ReadyIs(corev1.ConditionTrue)(n) && !hasNoExecute(n)
	}); err != nil {
		t.Fatalf("node %s never recovered: %v", node, err)
	}
	// The other nodes were never touched.
	for _, other := range f.Nodes()[1:] {
		waitForPods(ctx, t, f, other, 1)
	}
}

func hasNoExecute(n *corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// waitForPods waits until the node runs exactly want of the fleet's pods
// that are not being deleted.
func waitForPods(ctx context.Context, t *testing.T, f *fleet.Fleet, node string, want int) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pods, err := f.Client().CoreV1().Pods(metav1.NamespaceDefault).List(ctx,
			metav1.ListOptions{LabelSelector: fleet.PodLabel + "=" + node})
		if err != nil {
			t.Fatalf("list pods of %s: %v", node, err)
		}
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		if live == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s runs %d pods, want %d: %v", node, live, want, ctx.Err())
		case <-tick.C:
		}
	}
}
