package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// PodStatusWrites counts the pod status writes of a fleet since it started.
type PodStatusWrites struct {
	// Written is how many the apiserver accepted; Failed how many it
	// refused or did not answer in time. A write to a pod found deleted is
	// neither: its node stops writing it.
	Written, Failed int64
}

// writeCounts are the counters behind PodStatusWrites, shared by the
// fleet's nodes.
type writeCounts struct {
	written, failed atomic.Int64
}

func (c *writeCounts) snapshot() PodStatusWrites {
	return PodStatusWrites{Written: c.written.Load(), Failed: c.failed.Load()}
}

// churnSchedule returns when node i of n, each with perNode pods, writes its
// first pod status after the start, and the period between its writes: it
// writes its pods in turn, each once per every, and the offsets spread the
// nodes over one period, so that the writes of the whole fleet come evenly,
// every/(n*perNode) apart, rather than in bursts.
func churnSchedule(i, n, perNode int, every time.Duration) (offset, period time.Duration) {
	period = max(every/time.Duration(perNode), time.Nanosecond)
	return period * time.Duration(i) / time.Duration(n), period
}

// churnPods starts, for every node, the writes of its pods' statuses, whose
// containers started at created. They stop when ctx ends.
func (f *Fleet) churnPods(ctx context.Context, created time.Time) {
	start := f.opts.Clock.Now()
	log := klog.FromContext(ctx)
	for i, node := range f.names {
		offset, period := churnSchedule(i, len(f.names), f.opts.PodsPerNode, f.opts.PodStatusEvery)
		names := make([]string, f.opts.PodsPerNode)
		for j := range names {
			names[j] = podName(node, j)
		}
		c := newPodChurn(f.pods, f.opts.PodNamespace, f.opts.Clock, names, created, start.Add(offset), period,
			f.members[node].reporter.Paused, &f.podWrites)
		nodeCtx := klog.NewContext(ctx, log.WithValues("Node", klog.KRef("", node)))
		f.wg.Go(func() { c.run(nodeCtx) })
	}
}

// podChurn writes the statuses of one node's pods, one pod per period in
// turn, as the node's kubelet reports a container restart. Only its run
// uses its state.
type podChurn struct {
	pods      typedcorev1.PodInterface
	namespace string
	clock     clock.WithTicker
	// names are the node's pods; the write of slot k goes to names[k%len].
	names []string
	// first is when slot 0 is due; each next slot is due period later.
	first  time.Time
	period time.Duration
	// paused says whether the node's kubelet is stopped, which writes
	// nothing.
	paused func() bool
	counts *writeCounts

	// restarts, started and gone are per pod: how many times its
	// container restarted, when its current run started, and whether the
	// pod was found deleted.
	restarts []int32
	started  []time.Time
	gone     []bool
}

// newPodChurn returns the writer of the statuses of the pods names in
// namespace, whose containers started at created; its first write is due
// at first.
func newPodChurn(client kubernetes.Interface, namespace string, clk clock.WithTicker, names []string, created, first time.Time,
	period time.Duration, paused func() bool, counts *writeCounts) *podChurn {
	c := &podChurn{
		pods: client.CoreV1().Pods(namespace), namespace: namespace, clock: clk, names: names,
		first: first, period: period, paused: paused, counts: counts,
		restarts: make([]int32, len(names)), started: make([]time.Time, len(names)), gone: make([]bool, len(names)),
	}
	for i := range c.started {
		c.started[i] = created
	}
	return c
}

// run writes a pod status in each slot until ctx ends. A slot whose node
// is paused, or whose pod is gone, passes without a write. When the writes
// fall behind by whole periods, as on an overloaded apiserver, the missed
// slots pass too: a kubelet reports the state it finds, and does not catch
// up in a burst.
func (c *podChurn) run(ctx context.Context) {
	for slot := int64(0); ; slot++ {
		due := c.first.Add(time.Duration(slot) * c.period)
		if !c.sleepUntil(ctx, due) {
			return
		}
		if late := c.clock.Since(due); late >= c.period {
			slot += int64(late / c.period)
		}
		pod := int(slot % int64(len(c.names)))
		if c.paused() || c.gone[pod] {
			continue
		}
		c.write(ctx, pod)
	}
}

// sleepUntil waits on the clock until t and says whether ctx is still live.
func (c *podChurn) sleepUntil(ctx context.Context, t time.Time) bool {
	d := t.Sub(c.clock.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := c.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return ctx.Err() == nil
	}
}

// write reports that the pod's container restarted now.
func (c *podChurn) write(ctx context.Context, pod int) {
	now := c.clock.Now()
	name := c.names[pod]
	patch, err := restartPatch(name, c.restarts[pod]+1, c.started[pod], now)
	if err == nil {
		_, err = c.pods.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	switch {
	case apierrors.IsNotFound(err):
		c.gone[pod] = true
	case err != nil:
		c.counts.failed.Add(1)
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Pod status write failed", "Pod", klog.KRef(c.namespace, name), "err", err)
		}
	default:
		c.counts.written.Add(1)
		c.restarts[pod]++
		c.started[pod] = now
	}
}

// restartPatch is a strategic merge patch of a pod's status that reports
// its container's restart number restarts at now, after a run that started
// at lastStart: running again, ready, and the run that ended as its last
// state. The container status list is atomic, so the patch replaces it.
func restartPatch(pod string, restarts int32, lastStart, now time.Time) ([]byte, error) {
	ended := &corev1.ContainerStateTerminated{
		ExitCode:    1,
		Reason:      "Error",
		StartedAt:   metav1.NewTime(lastStart),
		FinishedAt:  metav1.NewTime(now),
		ContainerID: containerStatus(pod, restarts-1, lastStart, nil).ContainerID,
	}
	var p struct {
		Status struct {
			ContainerStatuses []corev1.ContainerStatus `json:"containerStatuses"`
		} `json:"status"`
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{containerStatus(pod, restarts, now, ended)}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("pod %s restart patch: %w", pod, err)
	}
	return b, nil
}
