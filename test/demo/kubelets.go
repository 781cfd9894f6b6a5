package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// nodeFleet is what the script does to the nodes, whatever runs them:
// *harness.KubeletFleet is one, and the simulated fleet is one through
// simulatedFleet.
type nodeFleet interface {
	// Nodes returns every node's name, Zones the zones in order, and
	// InZone the nodes of one.
	Nodes() []string
	Zones() []string
	InZone(zone string) []string
	// Stop silences the named nodes: no heartbeat, no status, no pod
	// status, until Resume.
	Stop(names ...string) error
	Resume(names ...string) error
}

// simulatedFleet is pkg/fleet's fleet as a nodeFleet: stopping and resuming
// a reporter cannot fail.
type simulatedFleet struct{ *fleet.Fleet }

// Stop stops the named nodes' reporters.
func (f simulatedFleet) Stop(names ...string) error {
	f.Fleet.Stop(names...)
	return nil
}

// Resume resumes the named nodes' reporters.
func (f simulatedFleet) Resume(names ...string) error {
	f.Fleet.Resume(names...)
	return nil
}

// tolerations are what every pod of the demo tolerates: unreachable and
// not-ready, for t.tolerationSeconds.
func tolerations(t timings) []corev1.Toleration {
	var out []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(t.tolerationSeconds)})
	}
	return out
}

// startSimulated starts pkg/fleet's simulated fleet, its pods bound and
// running, on the simulated timings.
func startSimulated(ctx context.Context, cfg *rest.Config, c config, t timings) (nodeFleet, func(), error) {
	fmt.Printf("Starting a fleet of %d simulated nodes in %d zones, %d pods each ...\n", c.nodes, c.zones, podsPerNode)
	f, err := fleet.Start(ctx, cfg, fleet.Options{
		Nodes:                     c.nodes,
		Zones:                     c.zones,
		PodsPerNode:               podsPerNode,
		LeaseDurationSeconds:      2, // renewed every 0.5s, t.renewEvery
		NodeStatusUpdateFrequency: t.statusEvery,
		PodTolerations:            tolerations(t),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start fleet: %w", err)
	}
	return simulatedFleet{f}, f.Close, nil
}

// startHollow starts c.nodes hollow kubelets from kubemark at binary, their
// logs under c.outDir/kubelets, as users in system:masters, and binds to
// each podsPerNode pods with the label the simulated fleet gives its own, for
// the observer to count.
func startHollow(ctx context.Context, env *envtest.Environment, cs kubernetes.Interface, binary string, c config, t timings) (nodeFleet, func(), error) {
	dir := filepath.Join(c.outDir, "kubelets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", dir, err)
	}
	kubeconfig := filepath.Join(c.outDir, "kubelets.kubeconfig")
	if err := harness.WriteKubeconfig(env, "hollow-kubelets", kubeconfig); err != nil {
		return nil, nil, err
	}
	fmt.Printf("Starting %d hollow kubelets (%s) in %d zones, %d pods each, their logs in %s ...\n",
		c.nodes, binary, c.zones, podsPerNode, dir)
	f, err := harness.StartKubeletFleet(ctx, harness.HollowKubeletConfig{Binary: binary, Kubeconfig: kubeconfig, Dir: dir},
		"hollow-", "hollow", c.nodes, c.zones)
	if err != nil {
		return nil, nil, fmt.Errorf("start hollow kubelets: %w", err)
	}
	// A scheduler binds pods only to nodes that are Ready and untainted: a
	// kubelet says Ready=False for its first seconds, up to 20s while it
	// retries its CSINode, and the pods bound to it then would be evicted
	// at the end of their not-ready toleration, before the story starts.
	fmt.Println("Waiting for every kubelet to register and say Ready before binding its pods, as a scheduler would ...")
	if err := awaitReady(ctx, cs, f.Nodes(), time.Minute+t.startupGrace); err != nil {
		f.Close()
		return nil, nil, err
	}
	for _, node := range f.Nodes() {
		for i := range podsPerNode {
			pod := harness.KubeletPod(corev1.NamespaceDefault, fmt.Sprintf("%s-pod-%d", node, i), node,
				map[string]string{fleet.PodLabel: node}, tolerations(t)...)
			if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("create pod %s: %w", pod.Name, err)
			}
		}
	}
	return f, f.Close, nil
}

// awaitReady waits until every one of the named nodes is Ready without
// taints, or timeout passes.
func awaitReady(ctx context.Context, cs kubernetes.Interface, names []string, timeout time.Duration) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("list nodes: %w", err)
		}
		ready := map[string]bool{}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0 {
					ready[n.Name] = true
				}
			}
		}
		pending = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return ready[n] })
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s not Ready without taints after %v: %w", plural(len(pending), "node"), timeout, err)
	}
	return nil
}
