package nodehealth

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podMarkWorkers is how many nodes have their pods marked NotReady at once,
// each with up to podWorkers of its pods in flight, and podWrites how many
// pod writes they have in flight together: a node waiting for its live
// read, or for the last of its pods, leaves its share of the writes to the
// others.
const (
	podMarkWorkers = 32
	podWrites      = 128
)

// podMarks marks the pods of the nodes the looks found silent NotReady, on
// workers and a queue of its own: a look (a node's mark, its taints) never
// waits behind another node's pod writes. When a zone dies, its nodes'
// deadlines come within seconds of each other, and their pods outnumber
// them tens of times; on the looks' own workers, every mark after the
// first few waited for the pods of the nodes marked before it.
//
// A node queued here is marked as the cluster shows it when its turn comes:
// its pods are marked only while it is still Unknown and nothing holds the
// marking, so that a node back since its look keeps its pods' readiness.
type podMarks struct {
	r     *Reconciler
	queue workqueue.TypedRateLimitingInterface[string]
	// slots holds a token per pod write in flight.
	slots chan struct{}
}

func newPodMarks(r *Reconciler) *podMarks {
	return &podMarks{r: r, slots: make(chan struct{}, podWrites), queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName + "-pods"})}
}

// write sends one pod write once fewer than podWrites are in flight.
func (p *podMarks) write(ctx context.Context, send func() error) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	return send()
}

// add asks for the node's pods to be marked NotReady.
func (p *podMarks) add(node string) { p.queue.Add(node) }

// NeedLeaderElection is true: only the leader writes.
func (p *podMarks) NeedLeaderElection() bool { return true }

// Start runs the workers until ctx ends.
func (p *podMarks) Start(ctx context.Context) error {
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithName("pod-marks"))
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	done := make(chan struct{})
	for range podMarkWorkers {
		go func() {
			defer func() { done <- struct{}{} }()
			for p.next(ctx) {
			}
		}()
	}
	for range podMarkWorkers {
		<-done
	}
	return nil
}

// next marks the pods of the next node in the queue, and reports whether
// the queue is still open.
func (p *podMarks) next(ctx context.Context) bool {
	name, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(name)
	log := ctrl.LoggerFrom(ctx).WithValues("Node", name)
	if err := p.mark(ctrl.LoggerInto(ctx, log), name); err != nil {
		log.Error(err, "Marking the node's pods NotReady failed; trying again")
		p.queue.AddRateLimited(name)
		return true
	}
	p.queue.Forget(name)
	return true
}

// mark marks the node's pods NotReady if it still calls for it.
func (p *podMarks) mark(ctx context.Context, name string) error {
	r := p.r
	if r.d.ReconcileTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.d.ReconcileTimeout)
		defer cancel()
	}
	node := &corev1.Node{}
	if err := r.d.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("get node %q: %w", name, err))
	}
	return r.markPodsNotReady(ctx, node)
}
