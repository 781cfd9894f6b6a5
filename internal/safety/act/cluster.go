package act

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// ResyncPort is what the resync reads beyond a look's port.
type ResyncPort interface {
	LookPort
	// Cached returns the node as the cache shows it, nil for none.
	Cached(ctx context.Context, name string) *corev1.Node
	// Settings returns the settings of the node's pool.
	Settings(ctx context.Context, node *corev1.Node) policy.Settings
	// Expect says the node may be marked before long: its pods are to be
	// at hand by then.
	Expect(name string)
}

// freezeKeeper tracks whether the cluster's copy of the partition freeze
// and of the recent unwatched spans is behind the model's.
type freezeKeeper struct {
	mu    sync.Mutex
	dirty bool
	// stale asks the next keep to write, whatever changed: an outage was
	// excused. It is set without mu, so that a look never waits for a
	// write of the freeze in flight.
	stale atomic.Bool
}

// Changed carries out a change of the disruption state made outside a look
// (a tick, the seed, a node's removal): it looks at once at the nodes the
// change affects and keeps a new freeze in the cluster. It returns the change, resolved, for the caller to tell.
func (x *Executor) Changed(ctx context.Context, p LookPort, c disruption.Change) safety.Change {
	if c.Empty() {
		return safety.Change{}
	}
	now := p.Now()
	ch := x.model.Affected(c, now)
	wakeAll(p, ch.Wake, now)
	x.keepChanged(ctx, p, ch)
	return ch
}

// Resync is the safety net behind the wakes and the clock of the partition
// freeze, run every period: it lets the freeze's window and cooldown
// advance, keeps the freeze in the cluster if the cluster's copy is
// behind, looks at once at the nodes whose deadline passed without a
// verdict, at the nodes listed at the start that no look has observed yet,
// and at every node the cache shows short of what the model wants
// of it (a node that needs its NoExecute taint, lacks it, and is neither
// held nor waiting its turn), whatever wakes were lost, and has the pods of
// the nodes silent for half their grace listed. It returns the
// tick's change and the number of those stray nodes.
func (x *Executor) Resync(ctx context.Context, p ResyncPort) (safety.Change, int) {
	blind := x.see(ctx, p)
	now := p.Now()
	ticked, fading := x.model.Tick(now, blind)
	ch := x.Changed(ctx, p, ticked)
	x.keep(ctx, p, false)
	for _, name := range x.model.Overdue(now) {
		p.Wake(name, safety.Next{At: now, Deadline: true})
	}
	for _, name := range x.model.Unseen() {
		p.Wake(name, safety.Next{At: now})
	}
	// A node silent for half its grace has its pods listed while the rest
	// of its grace runs: when a zone dies, the list of every pod takes
	// seconds, and its nodes' pods wait for it after their marks.
	for _, name := range fading {
		p.Expect(name)
	}
	strays := 0
	// Only the model's candidates are read: the nodes not judged healthy
	// and those last seen tainted, a handful in a healthy cluster.
	for _, name := range x.model.Candidates() {
		if node := p.Cached(ctx, name); node != nil && x.model.Stray(node, p.Settings(ctx, node), now) {
			p.Wake(name, safety.Next{At: now})
			strays++
		}
	}
	return ch, strays
}

// see reports whether the apiserver is out of the controller's reach, and
// first takes every outage that ended off every node's silence
// (safety.Model.Excuse): the kubelets' heartbeats could not be written, or
// not be seen, so the span says nothing of the nodes. The next KeepFreeze
// writes the spans the freeze no longer counts, for a new leader, which
// did not see them. Every turn of the executor sees before it decides.
func (x *Executor) see(ctx context.Context, p Reader) bool {
	if x.sight == nil {
		return false
	}
	blind, ended := x.sight.Take()
	for _, o := range ended {
		x.model.Excuse(o.From, o.To, p.Now())
		x.freeze.stale.Store(true)
		logr.FromContextOrDiscard(ctx).Info("Reached the apiserver again; the time it could not be reached counts against no node",
			"unreachableSince", o.From, "for", o.To.Sub(o.From))
	}
	return blind
}

// Unwatched takes a span no leader watched the cluster out of the partition
// freeze's window (safety.Model.Unwatched), and has the next KeepFreeze
// write it, for the leader after this one.
func (x *Executor) Unwatched(from, to, now time.Time) {
	x.model.Unwatched(from, to, now)
	x.freeze.stale.Store(true)
}

// KeepFreeze writes the model's partition freeze and its recent unwatched
// spans into the cluster if they changed since the last write that landed,
// or an outage ended since. A write that fails is logged and tried again at
// the next change and at every resync until one lands.
func (x *Executor) KeepFreeze(ctx context.Context, p LookPort) {
	x.see(ctx, p)
	x.keep(ctx, p, false)
}

// keepChanged keeps the freeze when a change started or ended it, or its
// cooldown.
func (x *Executor) keepChanged(ctx context.Context, p LookPort, c safety.Change) {
	if c.Freeze || c.Cooldown {
		x.keep(ctx, p, true)
	}
}

// keep writes the freeze if it is behind, but never before the model is
// seeded: until it has read what the cluster kept, the model's empty freeze
// would erase a freeze the last leader kept there.
func (x *Executor) keep(ctx context.Context, p LookPort, changed bool) {
	k := &x.freeze
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dirty = k.stale.Swap(false) || k.dirty || changed
	if !k.dirty || !x.model.Seeded() {
		return
	}
	var freeze *disruption.Record
	if rec, ok := x.model.FreezeRecord(); ok {
		freeze = &rec
	}
	if err := p.KeepFreeze(ctx, freeze, x.model.UnwatchedSpans(p.Now())); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Could not keep the partition freeze in the cluster; trying again at the next resync")
		return
	}
	k.dirty = false
}
