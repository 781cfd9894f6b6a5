package nodehealth

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/patch"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// port is the executor's way to the apiserver and to the nodes' wakes
// (package safety/act): live reads through APIReader, writes through
// Client, which reads its own Node writes back.
type port struct{ r *Reconciler }

// Now returns the local time.
func (p port) Now() time.Time { return p.r.d.Clock.Now() }

// Stamp returns a time the apiserver's clock has surely not reached.
func (p port) Stamp() time.Time { return p.r.stamp(p.r.d.Clock.Now()) }

// Cached returns the node as the cache shows it, nil for none.
func (p port) Cached(ctx context.Context, name string) *corev1.Node {
	node := &corev1.Node{}
	if err := p.r.d.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil
	}
	return node
}

// Settings returns the settings of the node's pool.
func (p port) Settings(ctx context.Context, node *corev1.Node) policy.Settings {
	return p.r.settings(ctx, node)
}

// Live reads the node and its Lease from the apiserver.
func (p port) Live(ctx context.Context, name string) (*corev1.Node, *coordinationv1.Lease, error) {
	return ReadLive(ctx, p.r.d.APIReader, name)
}

// Lease reads the Lease of a node about to be marked; its pods are needed
// once it is, and are listed meanwhile.
func (p port) Lease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	p.Expect(name)
	return getLease(ctx, p.r.d.APIReader, name)
}

// Expect has the node's pods listed, for a mark that may come.
func (p port) Expect(name string) { p.r.pods().Expect(name) }

// PatchStatus patches the node's status, locked to base's resourceVersion.
func (p port) PatchStatus(ctx context.Context, base, node *corev1.Node) error {
	return p.r.d.Client.Status().Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// PatchNode patches the node, locked to base's resourceVersion.
func (p port) PatchNode(ctx context.Context, base, node *corev1.Node) error {
	return p.r.d.Client.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// Wake sets the node's next look.
func (p port) Wake(name string, next safety.Next) { p.r.world.wakes.set(name, next) }

// MarkPod sets the pod's Ready condition False with a strategic merge,
// which changes that condition alone; the UID keeps the patch off a new pod
// that took the name since the cache saw this one.
func (p port) MarkPod(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}
	pod = pod.DeepCopy()
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodReady {
			c.Status, c.LastTransitionTime = ready.Status, ready.LastTransitionTime
		}
	}
	err := p.r.world.podMarks.write(ctx, func() error {
		return p.r.d.Client.Status().Patch(ctx, pod, patch.PodCondition(ready))
	})
	if err != nil {
		if patch.Replaced(err) {
			return nil
		}
		return fmt.Errorf("patch pod %s/%s status: %w", pod.Namespace, pod.Name, err)
	}
	p.r.d.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonNodeNotReady, actionMarkNotReady, "Node is not ready")
	return nil
}

// ReadLive reads a node and its Lease (nil for none) from the apiserver,
// side by side, so that a confirmation waits for one round trip and not
// two.
func ReadLive(ctx context.Context, c client.Reader, name string) (*corev1.Node, *coordinationv1.Lease, error) {
	type leaseRead struct {
		lease *coordinationv1.Lease
		err   error
	}
	leaseDone := make(chan leaseRead, 1)
	go func() {
		lease, err := getLease(ctx, c, name)
		leaseDone <- leaseRead{lease, err}
	}()
	node := &corev1.Node{}
	nodeErr := c.Get(ctx, client.ObjectKey{Name: name}, node)
	read := <-leaseDone
	if nodeErr != nil {
		return nil, nil, fmt.Errorf("read node %q live: %w", name, nodeErr)
	}
	if read.err != nil {
		return nil, nil, fmt.Errorf("read lease live: %w", read.err)
	}
	return node, read.lease, nil
}

// getLease returns the node's Lease, or nil when it has none.
func getLease(ctx context.Context, c client.Reader, name string, opts ...client.GetOption) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: LeaseNamespace, Name: name}, lease, opts...)
	switch {
	case err == nil:
		return lease, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("get lease %s/%s: %w", LeaseNamespace, name, err)
	}
}
