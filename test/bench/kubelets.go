package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// hollowFleet is hollow kubelets seen as the bench's fleet: Stop freezes a
// kubelet (SIGSTOP), Resume lets it run again. The pods' statuses are the
// kubelets' own, so the bench writes none.
type hollowFleet struct {
	*harness.KubeletFleet
	podCreation time.Duration
}

// Stop freezes the named nodes' kubelets. A kubelet that does not freeze is
// one whose process is gone: the run then waits out its timeout for that
// node, and says so, so a failure here is printed and not returned.
func (h *hollowFleet) Stop(names ...string) {
	if err := h.KubeletFleet.Stop(names...); err != nil {
		fmt.Printf("Not every kubelet froze: %v\n", err)
	}
}

// Resume lets the named nodes' frozen kubelets run again; a failure shows
// as nodes that never recover, and is printed, as Stop's.
func (h *hollowFleet) Resume(names ...string) {
	if err := h.KubeletFleet.Resume(names...); err != nil {
		fmt.Printf("Not every kubelet resumed: %v\n", err)
	}
}

// PodStatusWrites is zero: the bench writes no pod status for real kubelets.
func (h *hollowFleet) PodStatusWrites() fleet.PodStatusWrites { return fleet.PodStatusWrites{} }

// PodCreation is how long the pods took to be created and seen Running and
// Ready.
func (h *hollowFleet) PodCreation() time.Duration { return h.podCreation }

// hollowNote says in results.md what hollow kubelets change.
const hollowNote = "The nodes are hollow kubelets (`--kubelets=hollow`: kubemark's kubelet, the kubelet's own code over a fake container runtime, " +
	"a process each) with kubemark's fixed timings (Lease 40s renewed every 10s, status computed every 10s); a stopped node is a frozen kubelet (SIGSTOP). " +
	"The pods' statuses are the kubelets' own: the bench writes none, and the note on pod status writes below does not apply. " +
	"Each run's line gives the kubelets' own CPU and memory over its steady state."

// applyKubelets checks --kubelets against the other flags, set the names
// given on the command line. Hollow kubelets write their own pod statuses
// and list the images they pulled, so the flags that shape the simulated
// fleet's are refused when given, and zero otherwise.
func (c *config) applyKubelets(set map[string]bool) error {
	switch c.kubelets {
	case kubeletsSimulated:
		return nil
	case kubeletsHollow:
	default:
		return fmt.Errorf("--kubelets=%s: must be %q or %q", c.kubelets, kubeletsSimulated, kubeletsHollow)
	}
	for _, name := range []string{"pod-status-every", "images-per-node"} {
		if set[name] {
			return fmt.Errorf("--%s with --kubelets=hollow: only the simulated fleet has it; hollow kubelets write their own pod statuses and image lists", name)
		}
	}
	c.podStatusEvery, c.imagesPerNode = 0, 0
	return nil
}

// kubeletUser is who the hollow kubelets are to the apiserver under f: in
// system:masters when the clients are exempt, else the simulated fleet's
// node user, which prepareIdentities binds to cluster-admin.
func kubeletUser(f fairness) envtest.User {
	if f == fairnessExempt || f == "" {
		return envtest.User{Name: "bench-kubelets", Groups: []string{"system:masters"}}
	}
	return envtest.User{Name: fleetUser, Groups: []string{"system:nodes"}}
}

// startHollowFleet starts c.nodes hollow kubelets over c.zones zones on the
// control plane of env, logging under dir/kubelets, binds c.podsPerNode
// pods to each with the admin's cfg, and returns once every pod is Running
// and Ready.
func startHollowFleet(ctx context.Context, env *envtest.Environment, cfg *rest.Config, c config, dir string) (*hollowFleet, error) {
	kubeconfig := filepath.Join(dir, "kubelets.kubeconfig")
	if err := harness.WriteUserKubeconfig(env, kubeletUser(c.fairness), kubeconfig); err != nil {
		return nil, err
	}
	kf, err := harness.StartKubeletFleet(ctx, harness.HollowKubeletConfig{
		Binary: c.kubemark, Kubeconfig: kubeconfig, Dir: filepath.Join(dir, "kubelets"),
	}, "hollow-", "region", c.nodes, c.zones)
	if err != nil {
		return nil, err
	}
	h := &hollowFleet{KubeletFleet: kf}
	start := time.Now()
	if err := bindPods(ctx, cfg, kf.Nodes(), c.podsPerNode); err != nil {
		kf.Close()
		return nil, err
	}
	h.podCreation = time.Since(start)
	return h, nil
}

// bindPods creates perNode pods bound to each node, labeled with it as
// the simulated fleet's are, and waits until every one is Running and
// Ready.
func bindPods(ctx context.Context, cfg *rest.Config, nodes []string, perNode int) error {
	if perNode == 0 {
		return nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build the pods' client: %w", err)
	}
	pods := cs.CoreV1().Pods(metav1.NamespaceDefault)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, node := range nodes {
		for i := range perNode {
			pod := harness.KubeletPod(metav1.NamespaceDefault, fmt.Sprintf("%s-pod-%d", node, i), node, map[string]string{fleet.PodLabel: node})
			g.Go(func() error {
				if _, err := pods.Create(gctx, pod, metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("create pod %s: %w", pod.Name, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	want, running := len(nodes)*perNode, 0
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: fleet.PodLabel})
		if err != nil {
			return false, nil //nolint:nilerr // the apiserver is busy with the kubelets' start; ask again
		}
		running = 0
		for i := range list.Items {
			if p := &list.Items[i]; p.Status.Phase == corev1.PodRunning && podReady(p) {
				running++
			}
		}
		return running == want, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the kubelets to run their %d pods (%d Running and Ready): %w", want, running, err)
	}
	return nil
}

// kubeletUse is what the hollow kubelets used over a run's steady state,
// all of them together: the load the contender ran beside, which the
// simulated fleet, inside the bench's process, does not show apart.
type kubeletUse struct {
	CPUSecondsPerMinute float64 `json:"cpuSecondsPerMinute"`
	// PSSBytes and RSSBytes are their memory at the end of the steady
	// state, summed: PSS divides the pages they share (kubemark's binary)
	// among them, RSS counts those in each.
	PSSBytes int64 `json:"pssBytes"`
	RSSBytes int64 `json:"rssBytes"`
}

// String says it for a run's line in results.md.
func (k *kubeletUse) String() string {
	return fmt.Sprintf("the kubelets used %.2f CPU s/min in the steady state, %d MiB PSS (%d MiB RSS) in all",
		k.CPUSecondsPerMinute, k.PSSBytes>>20, k.RSSBytes>>20)
}

// meterKubelets reads what f's kubelets have used so far, and returns what
// records in a run their use since. The simulated fleet's nodes are no
// processes, and it records nothing for them.
func meterKubelets(f nodeFleet) (func(r *turn) error, error) {
	h, ok := f.(*hollowFleet)
	if !ok {
		return func(*turn) error { return nil }, nil
	}
	before, err := h.Usage()
	if err != nil {
		return nil, fmt.Errorf("read the kubelets' use: %w", err)
	}
	at := time.Now()
	return func(r *turn) error {
		after, err := h.Usage()
		if err != nil {
			return fmt.Errorf("read the kubelets' use: %w", err)
		}
		r.Kubelets = &kubeletUse{
			CPUSecondsPerMinute: (after.CPU - before.CPU).Seconds() / time.Since(at).Minutes(),
			PSSBytes:            after.PSS, RSSBytes: after.RSS,
		}
		fmt.Printf("Meanwhile %s.\n", r.Kubelets)
		return nil
	}, nil
}
