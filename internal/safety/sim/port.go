package sim

import (
	"context"
	"errors"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// port is a controller's way to the simulated cluster: what the reconcilers
// do over the apiserver and their work queues, done to the world, with its
// faults (an apiserver down, writes refused, a Node changed since the cache
// saw it) answered as the apiserver answers them.
type port struct{ c *controller }

// errDown and errRefused are what a request gets while the apiserver is
// down, or refuses the controller's writes.
var (
	errDown    = errors.New("apiserver unreachable")
	errRefused = errors.New("write refused")
)

// Now returns the world's time.
func (p port) Now() time.Time { return p.c.w.now }

// Stamp returns the world's time: the simulated apiserver's clock is the controller's.
func (p port) Stamp() time.Time { return p.c.w.now }

// sight tells the controller's executor whether the apiserver is down, and
// of the outages that ended, as the reconcilers' sight.Monitor does.
type sight struct{ c *controller }

// Take reports whether the apiserver is down, and takes the outages that
// ended since the last Take.
func (s sight) Take() (bool, []disruption.Span) {
	ended := s.c.ended
	s.c.ended = nil
	return s.c.w.down, ended
}

// Live reads the node and its Lease from the world, unless the apiserver is down.
func (p port) Live(_ context.Context, name string) (*corev1.Node, *coordinationv1.Lease, error) {
	if p.c.w.down {
		return nil, nil, errDown
	}
	lease := p.c.w.leases[name].DeepCopy()
	p.c.saw(lease)
	return p.c.w.nodes[name].DeepCopy(), lease, nil
}

// Lease reads the node's Lease from the world, unless the apiserver is down.
func (p port) Lease(_ context.Context, name string) (*coordinationv1.Lease, error) {
	if p.c.w.down {
		return nil, errDown
	}
	lease := p.c.w.leases[name].DeepCopy()
	p.c.saw(lease)
	return lease, nil
}

// PatchStatus writes the node's mark, unless writes are refused or the node changed since base.
func (p port) PatchStatus(_ context.Context, base, node *corev1.Node) error {
	if !p.c.canWrite() {
		return errRefused
	}
	if err := p.write(base, node); err != nil {
		return err
	}
	p.c.obs.marked(node.Name)
	return nil
}

// PatchNode writes the node's taints and records, unless its patches are refused or it changed since base.
func (p port) PatchNode(_ context.Context, base, node *corev1.Node) error {
	if !p.c.canWriteNode(node.Name) {
		return errRefused
	}
	if err := p.write(base, node); err != nil {
		return err
	}
	if t := lifecycleTaint(node); t != nil && lifecycleTaint(base) == nil {
		p.c.obs.tainted(node.Name, t.Key)
	}
	return nil
}

// write stores node in the world, if base is the version it holds, and
// reads it back into the cache, as the reconciler's client does.
func (p port) write(base, node *corev1.Node) error {
	p.c.letOneCutIn()
	w := p.c.w
	if w.nodes[node.Name].ResourceVersion != base.ResourceVersion {
		return apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, node.Name, errors.New("the object has been modified"))
	}
	written := node.DeepCopy()
	w.bump(written)
	w.nodes[node.Name] = written
	p.c.nodes[node.Name] = written.DeepCopy()
	node.ResourceVersion = written.ResourceVersion
	return nil
}

// Wake sets the node's next look.
func (p port) Wake(name string, next safety.Next) { p.c.wake(name, next) }

// KeepFreeze writes the freeze and the unwatched spans into the world, unless writes are refused.
func (p port) KeepFreeze(_ context.Context, freeze *disruption.Record, unwatched []disruption.Span) error {
	if !p.c.canWrite() {
		return errRefused
	}
	p.c.w.freeze, p.c.w.unwatched = freeze, unwatched
	return nil
}

// Cached returns the node as the controller's cache shows it.
func (p port) Cached(_ context.Context, name string) *corev1.Node { return p.c.nodes[name] }

// Settings returns the node's pool settings.
func (p port) Settings(_ context.Context, node *corev1.Node) policy.Settings {
	return p.c.w.settings(node)
}

// Expect does nothing: the simulated controller reads every node's pods
// from the world whole, and has them at hand whenever it marks.
func (p port) Expect(string) {}

// MarkPod sets the pod NotReady in the world, unless writes are refused.
func (p port) MarkPod(_ context.Context, pod *corev1.Pod, _ time.Time) error {
	if !p.c.canWrite() {
		return errRefused
	}
	pods := p.c.w.pods[pod.Spec.NodeName]
	for i := range pods {
		if pods[i].UID == pod.UID && setPodReady(&pods[i], corev1.ConditionFalse) {
			p.c.obs.podMarked(pod.Spec.NodeName, pod.UID)
		}
	}
	return nil
}

// Evict evicts the pod from the world, unless writes are refused.
func (p port) Evict(_ context.Context, node *corev1.Node, pod *corev1.Pod, d eviction.Decision) error {
	if !p.c.canWrite() {
		return errRefused
	}
	p.c.w.evicted[pod.UID] = p.c.w.now
	p.c.obs.evicted(node.Name, pod.UID, d.Taint)
	return nil
}
