package harness

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

var (
	costKubelets = flag.Int("hollow.cost", 0, "start this many hollow kubelets and report what each costs (TestHollowKubeletCost); 0 skips it")
	costSteady   = flag.Duration("hollow.steady", 2*time.Minute, "how long TestHollowKubeletCost measures them once all are Ready")
)

// startControlPlane starts kube-apiserver and etcd from $KUBEBUILDER_ASSETS
// until the test ends, and returns a client and a kubeconfig for hollow
// kubelets.
func startControlPlane(t *testing.T) (*kubernetes.Clientset, string) {
	t.Helper()
	logf.SetLogger(logr.Discard())
	env, cfg := testenv.Start(t, testenv.WithoutServiceAccounts)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(env, "hollow-kubelet", kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg), kubeconfig
}

func kubemark(t *testing.T) string {
	t.Helper()
	path, err := KubemarkBinary(filepath.Join("..", "..", "bin", "kubemark"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// nodeReady waits for the Node to be registered and Ready, and returns it.
func nodeReady(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				node = n
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s never Ready: %v", name, err)
	}
	return node
}

// leaseRenewed waits for the node's Lease to be renewed after since, and
// returns it.
func leaseRenewed(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, since time.Time, within time.Duration) *coordinationv1.Lease {
	t.Helper()
	var lease *coordinationv1.Lease
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false, nil //nolint:nilerr // not taken yet
		}
		lease = l
		return l.Spec.RenewTime.After(since), nil
	})
	if err != nil {
		t.Fatalf("Lease of %s not renewed after %v within %v: %v", name, since.Format(time.RFC3339Nano), within, err)
	}
	return lease
}

func TestHollowKubeletRegistersAndIsKilledFrozenAndRestarted(t *testing.T) {
	c, kubeconfig := startControlPlane(t)
	ctx := t.Context()
	k, err := StartHollowKubelet(ctx, HollowKubeletConfig{
		Binary: kubemark(t), Kubeconfig: kubeconfig, Dir: t.TempDir(), Region: "region-a", Zone: "zone-a1",
	}, "hollow-0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)

	node := nodeReady(ctx, t, c, k.Name)
	if node.Labels[LabelZone] != "zone-a1" || node.Labels[LabelRegion] != "region-a" {
		t.Errorf("node labels %v, want zone zone-a1 in region region-a", node.Labels)
	}
	lease := leaseRenewed(ctx, t, c, k.Name, time.Time{}, time.Minute)
	if got := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second; got != KubeletLeaseDuration {
		t.Errorf("Lease duration %v, want %v", got, KubeletLeaseDuration)
	}

	if err := k.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	// A frozen kubelet renews nothing: a renewal well past its interval
	// would be a process that did not stop.
	l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, KubeletLeaseRenewInterval+3*time.Second, false, func(ctx context.Context) (bool, error) {
		got, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.Name, metav1.GetOptions{})
		return err == nil && !got.Spec.RenewTime.Equal(l.Spec.RenewTime), nil
	}); err == nil {
		t.Fatalf("the Lease of a frozen kubelet was renewed")
	}
	if err := k.Resume(); err != nil {
		t.Fatal(err)
	}
	leaseRenewed(ctx, t, c, k.Name, frozen, 5*time.Second)

	before := k.Process().PID()
	restarted := time.Now()
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if k.Process().PID() == before {
		t.Fatalf("Restart kept process %d", before)
	}
	leaseRenewed(ctx, t, c, k.Name, restarted, 30*time.Second)

	k.Kill()
	select {
	case <-k.Process().Exited():
	default:
		t.Fatal("Kill returned before the process exited")
	}
}

func TestHollowKubeletRefusedStaticPodIsInItsLog(t *testing.T) {
	_, kubeconfig := startControlPlane(t)
	ctx := t.Context()
	k, err := StartHollowKubelet(ctx, HollowKubeletConfig{Binary: kubemark(t), Kubeconfig: kubeconfig, Dir: t.TempDir()}, "hollow-refuses")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	// A pod with no name and no containers does not validate.
	if err := k.AddStaticPod("bad.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: kube-system\nspec: {}\n")); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 40*time.Second, true, func(context.Context) (bool, error) {
		refusals, err := k.StaticPodRefusals()
		return len(refusals) > 0, err
	})
	if err != nil {
		t.Fatalf("the kubelet's log says nothing of the bad manifest (%s): %v", k.LogPath(), err)
	}
}

// TestHollowKubeletCost starts -hollow.cost hollow kubelets and reports,
// once all are Ready, what each takes: resident memory, and processor time
// over -hollow.steady. docs/kubelet.md quotes it.
func TestHollowKubeletCost(t *testing.T) {
	if *costKubelets == 0 {
		t.Skip("set -hollow.cost=N to measure N hollow kubelets")
	}
	c, kubeconfig := startControlPlane(t)
	ctx := t.Context()
	cfg := HollowKubeletConfig{Binary: kubemark(t), Kubeconfig: kubeconfig, Dir: t.TempDir(), Region: "r", Zone: "z"}
	names := make([]string, *costKubelets)
	for i := range names {
		names[i] = fmt.Sprintf("hollow-%03d", i)
	}
	start := time.Now()
	var startCPU time.Duration
	kubelets := make([]*HollowKubelet, 0, len(names))
	for _, name := range names {
		k, err := StartHollowKubelet(ctx, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Close)
		kubelets = append(kubelets, k)
	}
	for _, k := range kubelets {
		nodeReady(ctx, t, c, k.Name)
	}
	for _, k := range kubelets {
		u, err := k.Usage()
		if err != nil {
			t.Fatal(err)
		}
		startCPU += u.CPU
	}
	t.Logf("%d hollow kubelets Ready in %v, %v of CPU to start (%v each)", len(kubelets), time.Since(start).Round(time.Second),
		startCPU, startCPU/time.Duration(len(kubelets)))
	// Past the registration's burst of status updates.
	settle := 30 * time.Second
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(settle):
	}
	before := make([]Usage, len(kubelets))
	var err error
	for i, k := range kubelets {
		if before[i], err = k.Usage(); err != nil {
			t.Fatal(err)
		}
	}
	// The control plane's share, beside: what the kubelets' requests cost.
	controlPlane := append(childrenNamed(t, "kube-apiserver"), childrenNamed(t, "etcd")...)
	cpBefore := make([]Usage, len(controlPlane))
	for i, pid := range controlPlane {
		if cpBefore[i], err = ProcessUsage(pid); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(*costSteady):
	}
	elapsed := time.Since(began)
	var cpu time.Duration
	var rss, pss, maxRSS int64
	for i, k := range kubelets {
		u, err := k.Usage()
		if err != nil {
			t.Fatal(err)
		}
		cpu += u.CPU - before[i].CPU
		rss += u.RSS
		pss += u.PSS
		maxRSS = max(maxRSS, u.RSS)
	}
	var cpCPU time.Duration
	var cpRSS int64
	for i, pid := range controlPlane {
		u, err := ProcessUsage(pid)
		if err != nil {
			t.Fatal(err)
		}
		cpCPU += u.CPU - cpBefore[i].CPU
		cpRSS += u.RSS
	}
	n := int64(len(kubelets))
	t.Logf("steady over %v: %.2f%% of a core each (%.1f%% for all %d); RSS %.1f MiB each on average, %.1f MiB at most; PSS %.1f MiB each, %.0f MiB for all",
		elapsed.Round(time.Second), 100*cpu.Seconds()/elapsed.Seconds()/float64(n), 100*cpu.Seconds()/elapsed.Seconds(), n,
		float64(rss/n)/(1<<20), float64(maxRSS)/(1<<20), float64(pss/n)/(1<<20), float64(pss)/(1<<20))
	t.Logf("kube-apiserver and etcd meanwhile: %.1f%% of a core, RSS %.0f MiB", 100*cpCPU.Seconds()/elapsed.Seconds(), float64(cpRSS)/(1<<20))
}

// childrenNamed lists the processes this test started whose command is
// name.
func childrenNamed(t *testing.T, name string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndex(stat, []byte(") "))
		if open < 0 || end < 0 {
			continue
		}
		rest := strings.Fields(string(stat[end+2:]))
		if string(stat[open+1:end]) == name && len(rest) > 1 && rest[1] == self {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no %s among this test's processes", name)
	}
	return pids
}
