// Package act carries the safety model's decisions out, in one order,
// against a narrow port: read live, patch a Node's status, patch its taints,
// mark a pod, evict a pod, wake a node. The reconcilers implement the port
// over the apiserver and their work queues; the simulator (package
// safety/sim) implements it over its simulated cluster. Both run this code,
// so that what the simulator proves holds of the binary.
//
// A look at a node runs: the model's look; if the node's grace ran out, the
// live read that confirms the silence, and the mark (then the node is looked
// at again, from what the mark wrote); otherwise the patch of its taints and
// records, and its next look. The pods' turn, on workers of their own,
// marks the pods of a node found silent NotReady; the evictions' turn
// deletes the pods whose deadline passed, where the model lets them go.
package act

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// ErrBlind stops a mark while the apiserver is out of the controller's
// reach: a live read sent before an outage and answered after it says
// nothing of nodes whose kubelets have had no chance to write yet.
var ErrBlind = errors.New("apiserver out of reach")

// How soon a node is looked at again after a mark waited for the apiserver,
// and after a write lost a race with another writer, most often the kubelet
// posting a heartbeat.
const (
	BlindRetry    = 100 * time.Millisecond
	ConflictRetry = 20 * time.Millisecond
)

// Reader reads a node as the apiserver holds it now.
type Reader interface {
	// Now returns the local time.
	Now() time.Time
	// Live reads the node and its Lease (nil for none) from the apiserver.
	Live(ctx context.Context, name string) (*corev1.Node, *coordinationv1.Lease, error)
}

// LookPort is what a look at a node reads and writes.
type LookPort interface {
	Reader
	// Stamp returns the time to write for something done now: one the
	// apiserver's clock has surely not reached.
	Stamp() time.Time
	// Lease reads the node's Lease (nil for none) from the apiserver, just
	// before the node is marked.
	Lease(ctx context.Context, name string) (*coordinationv1.Lease, error)
	// PatchStatus writes node's conditions, locked to base's
	// resourceVersion: a conflict if the Node changed since.
	PatchStatus(ctx context.Context, base, node *corev1.Node) error
	// PatchNode writes node's taints and annotations, locked to base's
	// resourceVersion.
	PatchNode(ctx context.Context, base, node *corev1.Node) error
	// Wake sets when the node is looked at again.
	Wake(name string, next safety.Next)
	// KeepFreeze writes the partition freeze (nil for none) and the recent
	// spans no node could be marked in into the cluster, in place of what
	// it holds, for a new leader to carry on with.
	KeepFreeze(ctx context.Context, freeze *disruption.Record, unwatched []disruption.Span) error
}

// Sight tells the executor when the apiserver is out of the controller's
// reach (package sight).
type Sight interface {
	// Take reports whether the apiserver is out of reach now, and takes
	// the spans of the outages that ended since the last Take, each once.
	// An outage is there to take before the answer that ended it is handed
	// on.
	Take() (blind bool, ended []disruption.Span)
}

// Executor carries the decisions of one model out.
type Executor struct {
	model *safety.Model
	// sight tells of outages; nil for an apiserver always in reach.
	sight Sight
	// workers bounds how many pods of one node are written at once.
	workers int
	// freeze is whether the cluster's copy of the freeze is behind.
	freeze freezeKeeper
}

// New returns an executor of m's decisions that writes up to workers pods
// of a node at once, and learns of outages from sight (nil for none).
func New(m *safety.Model, workers int, sight Sight) *Executor {
	return &Executor{model: m, sight: sight, workers: max(workers, 1)}
}

// Outcome is what a look did.
type Outcome struct {
	// Decision is the look's decision; after a live read that heard the
	// node, the decision of the look at what the read showed.
	Decision safety.Decision
	// Change is what the looks changed beyond the node.
	Change safety.Change
	// Node is the node as the look left it: as written, if it wrote.
	Node *corev1.Node
	// Mark is set when the look marked the node Unknown; then nothing else
	// was done, and the node is looked at again at once.
	Mark *Mark
	// Wrote is true when the look patched the node's taints and records.
	Wrote bool
}

// Mark is a node marked Unknown.
type Mark struct {
	// Verdict is the verdict that called for the mark.
	Verdict health.Verdict
	// WasReady is true when the mark took the node from Ready.
	WasReady bool
	// Delay is how long after the node's deadline it was marked.
	Delay time.Duration
	// Read is how long the live reads that confirmed the silence took, and
	// Patch the mark's write: the parts of Delay spent waiting for the
	// apiserver.
	Read, Patch time.Duration
}

// Look looks at a node as the cache shows it, with its Lease (nil for none)
// and its pool's settings, and carries the decision out. A write that lost
// a race, or a mark that waited for the apiserver, is not an error: the
// node is looked at again shortly. Any other failure is returned, for the
// caller to retry with backoff. A freeze the looks started or ended is kept
// in the cluster before Look returns.
func (x *Executor) Look(ctx context.Context, p LookPort, node *corev1.Node, lease *coordinationv1.Lease, s policy.Settings) (Outcome, error) {
	out, err := x.carry(ctx, p, node, lease, s)
	x.keepChanged(ctx, p, out.Change)
	return out, err
}

// carry is Look but for the freeze.
func (x *Executor) carry(ctx context.Context, p LookPort, node *corev1.Node, lease *coordinationv1.Lease, s policy.Settings) (Outcome, error) {
	out := x.look(ctx, p, node, lease, s)
	d := out.Decision
	if d.Mark {
		live, liveLease, mark, err := x.mark(ctx, p, node, d.Verdict, s.Grace)
		if err != nil {
			return out, settle(ctx, p, node.Name, err)
		}
		if mark != nil {
			out.Node, out.Mark = live, mark
			p.Wake(node.Name, safety.Next{At: p.Now()})
			return out, nil
		}
		// The live read heard the node: look at what it showed.
		again := x.look(ctx, p, live, liveLease, s)
		again.Change = out.Change.Merge(again.Change)
		again.Decision.First = again.Decision.First || d.First
		out = again
		d = out.Decision
	}
	err := x.write(ctx, p, &out)
	p.Wake(out.Node.Name, d.Next)
	if err != nil {
		return out, settle(ctx, p, node.Name, err)
	}
	return out, nil
}

// look asks the model, and wakes the other nodes its change calls for.
func (x *Executor) look(ctx context.Context, p LookPort, node *corev1.Node, lease *coordinationv1.Lease, s policy.Settings) Outcome {
	blind := x.see(ctx, p)
	now := p.Now()
	d := x.model.Look(safety.Input{Node: node, Lease: lease, Settings: s, Now: now, Stamp: p.Stamp(), Blind: blind})
	c := x.model.Affected(d.Change, now)
	wakeAll(p, c.Wake, now)
	return Outcome{Decision: d, Change: c, Node: node}
}

// wakeAll looks at the named nodes at once.
func wakeAll(p LookPort, names []string, now time.Time) {
	for _, name := range names {
		p.Wake(name, safety.Next{At: now})
	}
}

// mark marks a node whose deadline passed, if a live read confirms its
// silence, and returns the node and its Lease as they now are.
//
// A mark costs two requests in the common case: the node's Lease read live,
// and the mark itself, a status patch locked to the resourceVersion of the
// cached node. A heartbeat the cache had not shown yet cancels the mark
// either way: one in the Lease is in the live read, one in the Node's status
// changed its resourceVersion and fails the patch. Only then is the Node
// read live, and the node judged again from what the apiserver holds.
func (x *Executor) mark(ctx context.Context, p LookPort, cached *corev1.Node, v health.Verdict, grace health.Grace) (*corev1.Node, *coordinationv1.Lease, *Mark, error) {
	sent := p.Now()
	lease, err := p.Lease(ctx, cached.Name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read lease live: %w", err)
	}
	read := p.Now().Sub(sent)
	node, mark, err := x.markIfSilent(ctx, p, cached, lease, v, grace)
	if apierrors.IsConflict(err) {
		logr.FromContextOrDiscard(ctx).V(1).Info("Node changed since the cache saw it; reading it live before marking")
		sent = p.Now()
		node, lease, err = p.Live(ctx, cached.Name)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read node %q live: %w", cached.Name, err)
		}
		read += p.Now().Sub(sent)
		node, mark, err = x.markIfSilent(ctx, p, node, lease, v, grace)
	}
	if mark != nil {
		mark.Read = read
	}
	return node, lease, mark, err
}

// markIfSilent marks the node Unknown unless the node, as given, or its
// Lease shows a heartbeat that moves its deadline.
func (x *Executor) markIfSilent(ctx context.Context, p LookPort, node *corev1.Node, lease *coordinationv1.Lease, v health.Verdict, grace health.Grace) (*corev1.Node, *Mark, error) {
	// What the reads show is as of now, not as of the look's start: a read
	// held up by a hung apiserver returns long after it was sent, and the
	// outage it ended is excused first.
	blind := x.see(ctx, p)
	now := p.Now()
	again, silent := x.model.Confirm(node, lease, grace, now)
	if !silent && again.Deadline.After(v.Deadline) {
		// A heartbeat the cache had not shown, or an apiserver outage that
		// ended while the node was read, and was excused.
		logr.FromContextOrDiscard(ctx).V(1).Info("Live read found the node heard since its deadline; not marking",
			"deadline", v.Deadline, "newDeadline", again.Deadline)
		return node, nil, nil
	}
	if blind {
		return nil, nil, fmt.Errorf("node %q: %w", node.Name, ErrBlind)
	}
	if !silent {
		return node, nil, nil
	}
	conds, changed := health.MarkUnknown(node.Status.Conditions, node.CreationTimestamp, metav1.NewTime(p.Stamp()))
	if !changed {
		return node, nil, nil
	}
	ready := health.ReadyCondition(node)
	marked := node.DeepCopy()
	marked.Status.Conditions = conds
	sent := p.Now()
	if err := p.PatchStatus(ctx, node, marked); err != nil {
		return nil, nil, fmt.Errorf("patch node %q status: %w", node.Name, err)
	}
	done := p.Now()
	return marked, &Mark{Verdict: v, WasReady: ready != nil && ready.Status == corev1.ConditionTrue,
		Delay: done.Sub(v.Deadline), Patch: done.Sub(sent)}, nil
}

// write patches the taints and records the look decided, in one patch
// locked to the node's resourceVersion. A write that took its zone's token
// and failed gives the token back, and wakes the nodes waiting behind it.
func (x *Executor) write(ctx context.Context, p LookPort, out *Outcome) error {
	w := out.Decision.Write
	if w == nil {
		return nil
	}
	node := out.Node
	patched := w.Apply(node)
	if err := p.PatchNode(ctx, node, patched); err != nil {
		wakeAll(p, x.model.TaintFailed(node.Name, w), p.Now())
		return fmt.Errorf("patch node %q taints: %w", node.Name, err)
	}
	out.Node, out.Wrote = patched, true
	return nil
}

// settle turns a write that lost a race, or a mark that waited for the
// apiserver, into a look shortly; anything else is the caller's to retry.
func settle(ctx context.Context, p LookPort, name string, err error) error {
	switch {
	case errors.Is(err, ErrBlind):
		logr.FromContextOrDiscard(ctx).V(1).Info("Not marking while the apiserver is out of reach", "error", err.Error())
		p.Wake(name, safety.Next{At: p.Now().Add(BlindRetry)})
		return nil
	case apierrors.IsConflict(err):
		logr.FromContextOrDiscard(ctx).V(2).Info("Node changed while being written; looking again", "error", err.Error())
		p.Wake(name, safety.Next{At: p.Now().Add(ConflictRetry)})
		return nil
	default:
		return err
	}
}
