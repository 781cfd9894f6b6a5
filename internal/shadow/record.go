package shadow

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// MaxEpisodes bounds the Record: the oldest closed episodes are dropped
// first, so that it fits in one ConfigMap.
const MaxEpisodes = 1000

// maxPodsListed bounds the pod names an episode lists per side.
const maxPodsListed = 10

// Side is what one controller did to a node during an episode.
type Side struct {
	// Marked is when it marked the node Unknown.
	Marked *time.Time `json:"marked,omitempty"`
	// NoExecute is the NoExecute taint it added, and NoExecuteAdded when.
	NoExecute      string     `json:"noExecute,omitempty"`
	NoExecuteAdded *time.Time `json:"noExecuteAdded,omitempty"`
	// Evicted counts the pods it deleted; FirstEviction is the earliest,
	// Pods names some of them.
	Evicted       int        `json:"evicted,omitempty"`
	FirstEviction *time.Time `json:"firstEviction,omitempty"`
	Pods          []string   `json:"pods,omitempty"`
}

// Episode is one node's time away from health, from the first action of
// either controller until the node is Ready again, as both saw it.
type Episode struct {
	Node string `json:"node"`
	// Ours is what this controller would have done, Upstream what the
	// controller that decides did.
	Ours     Side `json:"ours"`
	Upstream Side `json:"upstream"`
	// NoExecuteHeld is why this controller held the NoExecute taint back
	// when the other added it, "" if it did not.
	NoExecuteHeld string `json:"noExecuteHeld,omitempty"`
	// EvictionsHeld is why this controller held evictions back when the
	// other evicted, "" if it did not.
	EvictionsHeld string `json:"evictionsHeld,omitempty"`
	// EvictionsDue is, of the pods the other controller evicted before this
	// one did, the earliest deadline this one still had ahead: when it
	// would have begun evicting them.
	EvictionsDue *time.Time `json:"evictionsDue,omitempty"`
	// Ended is when the node was seen Ready again, nil while it is not.
	Ended *time.Time `json:"ended,omitempty"`

	// evicted are the pods each side evicted, by side and name, so that
	// none is counted twice; unhealthy is whether the node, as the other
	// controller left it, is not Ready or carries a lifecycle NoExecute
	// taint.
	evicted   map[evictedPod]bool
	unhealthy bool
}

// evictedPod is a pod evicted by one side.
type evictedPod struct {
	ours bool
	pod  string
}

// Record is the comparison a dry run keeps: one Episode per node and fault,
// the open ones and the latest closed ones.
type Record struct {
	mu       sync.Mutex
	episodes []*Episode
	open     map[string]*Episode
	changed  bool
}

// NewRecord returns an empty Record.
func NewRecord() *Record { return &Record{open: map[string]*Episode{}} }

// episode returns the node's open episode, opening one when it has none.
// The caller holds mu.
func (r *Record) episode(node string) *Episode {
	if e := r.open[node]; e != nil {
		return e
	}
	e := &Episode{Node: node}
	r.open[node] = e
	r.episodes = append(r.episodes, e)
	r.trim()
	return e
}

// trim drops the oldest ended episodes beyond MaxEpisodes.
func (r *Record) trim() {
	for len(r.episodes) > MaxEpisodes {
		i := slices.IndexFunc(r.episodes, func(e *Episode) bool { return e.Ended != nil })
		if i < 0 {
			return
		}
		r.episodes = slices.Delete(r.episodes, i, i+1)
	}
}

// update applies fn to the node's open episode, opening one if it has
// none.
func (r *Record) update(node string, fn func(*Episode)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.episode(node))
	r.changed = true
}

// Marked records a side's mark of the node at the given time; a mark seen
// again is not moved.
func (r *Record) Marked(node string, ours bool, at time.Time) {
	r.update(node, func(e *Episode) {
		s := e.side(ours)
		if s.Marked == nil {
			s.Marked = &at
		}
	})
}

// Tainted records a side's NoExecute taint on the node. held is why ours
// held it back, for an upstream taint that ours has not made.
func (r *Record) Tainted(node string, ours bool, key string, added time.Time, held string) {
	r.update(node, func(e *Episode) {
		s := e.side(ours)
		if s.NoExecute == "" {
			s.NoExecute, s.NoExecuteAdded = key, &added
		}
		if !ours && e.Ours.NoExecute == "" && e.NoExecuteHeld == "" {
			e.NoExecuteHeld = held
		}
	})
}

// Eviction is a pod's eviction by one side.
type Eviction struct {
	Node, Pod string
	// Ours is whether this controller made it.
	Ours bool
	// At is when it was made; Decided is when the pod was stamped with it,
	// zero if not known.
	At, Decided time.Time
	// Held is why ours held evictions back, for an eviction of the other
	// controller's that ours has not made.
	Held string
	// Due is when ours would have evicted the pod, for an eviction of the
	// other controller's made while ours' deadline was still ahead.
	Due time.Time
}

// Evicted records a side's eviction of a pod, in the node's open episode.
// An eviction decided before the node's latest episode ended belongs to
// that episode, timed by its stamp, however late it is seen: the pod's
// eviction and the node's return race through separate watches, and the
// straggler opens no new episode.
func (r *Record) Evicted(ev Eviction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.episodeFor(ev.Node, ev.Decided)
	if e == nil {
		e = r.episode(ev.Node)
	} else if e.Ended != nil {
		ev.At = ev.Decided
	}
	if !e.addEviction(ev.Ours, ev.Pod, ev.At) {
		return
	}
	if !ev.Ours && ev.Held != "" && e.EvictionsHeld == "" {
		e.EvictionsHeld = ev.Held
	}
	if !ev.Ours && ev.Held == "" && !ev.Due.IsZero() && (e.EvictionsDue == nil || ev.Due.Before(*e.EvictionsDue)) {
		e.EvictionsDue = &ev.Due
	}
	r.changed = true
}

// episodeFor returns the episode an action decided at the given time
// belongs to: the node's open one, or else its latest if that ended no
// earlier; nil if neither. The caller holds mu.
func (r *Record) episodeFor(node string, decided time.Time) *Episode {
	if e := r.open[node]; e != nil {
		return e
	}
	if decided.IsZero() {
		return nil
	}
	for i := len(r.episodes) - 1; i >= 0; i-- {
		if e := r.episodes[i]; e.Node == node {
			if decided.After(*e.Ended) {
				return nil
			}
			return e
		}
	}
	return nil
}

// UpstreamHealth records whether the node, as the other controller left it,
// is Ready without a lifecycle NoExecute taint.
func (r *Record) UpstreamHealth(node string, healthy bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.open[node]; e != nil {
		e.unhealthy = !healthy
	}
}

// Recovered ends the node's open episode, once this controller has left it
// Ready without a lifecycle NoExecute taint: it ends only if the other
// controller has too.
func (r *Record) Recovered(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.open[node]; e != nil && !e.unhealthy {
		e.Ended = &at
		delete(r.open, node)
		r.changed = true
	}
}

// Gone ends the episode of a node that was deleted.
func (r *Record) Gone(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.open[node]; e != nil {
		e.Ended = &at
		delete(r.open, node)
		r.changed = true
	}
}

// addEviction counts a side's eviction of a pod, and reports whether it was
// not counted before.
func (e *Episode) addEviction(ours bool, pod string, at time.Time) bool {
	k := evictedPod{ours, pod}
	if e.evicted[k] {
		return false
	}
	if e.evicted == nil {
		e.evicted = map[evictedPod]bool{}
	}
	e.evicted[k] = true
	s := e.side(ours)
	s.Evicted++
	if s.FirstEviction == nil || at.Before(*s.FirstEviction) {
		s.FirstEviction = &at
	}
	if len(s.Pods) < maxPodsListed {
		s.Pods = append(s.Pods, pod)
	}
	return true
}

// remember takes the pods an episode loaded from the cluster lists as
// counted. Beyond the maxPodsListed it lists, an eviction made again after
// a restart can be counted twice.
func (e *Episode) remember() {
	e.evicted = map[evictedPod]bool{}
	for _, ours := range []bool{true, false} {
		for _, p := range e.side(ours).Pods {
			e.evicted[evictedPod{ours, p}] = true
		}
	}
}

// absorb takes into a loaded episode what this run recorded of the same
// fault before the load: the earlier marks and taints, and the evictions
// not counted yet.
func (e *Episode) absorb(cur *Episode) {
	for _, ours := range []bool{true, false} {
		to, from := e.side(ours), cur.side(ours)
		if from.Marked != nil && (to.Marked == nil || from.Marked.Before(*to.Marked)) {
			to.Marked = from.Marked
		}
		if to.NoExecute == "" {
			to.NoExecute, to.NoExecuteAdded = from.NoExecute, from.NoExecuteAdded
		}
		for k := range cur.evicted {
			if k.ours == ours {
				e.addEviction(ours, k.pod, *from.FirstEviction)
			}
		}
	}
	if e.NoExecuteHeld == "" {
		e.NoExecuteHeld = cur.NoExecuteHeld
	}
	if e.EvictionsHeld == "" {
		e.EvictionsHeld = cur.EvictionsHeld
	}
	if cur.EvictionsDue != nil && (e.EvictionsDue == nil || cur.EvictionsDue.Before(*e.EvictionsDue)) {
		e.EvictionsDue = cur.EvictionsDue
	}
	e.unhealthy = cur.unhealthy
}

func (e *Episode) side(ours bool) *Side {
	if ours {
		return &e.Ours
	}
	return &e.Upstream
}

// Episodes returns a copy of the episodes, oldest first, and whether they
// changed since the last call that asked to reset.
func (r *Record) Episodes(reset bool) ([]Episode, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Episode, len(r.episodes))
	for i, e := range r.episodes {
		out[i] = *e
		out[i].evicted = nil
		out[i].Ours.Pods = slices.Clone(e.Ours.Pods)
		out[i].Upstream.Pods = slices.Clone(e.Upstream.Pods)
	}
	changed := r.changed
	if reset {
		r.changed = false
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start().Before(out[j].start()) })
	return out, changed
}

// start is the episode's first action on either side.
func (e *Episode) start() time.Time {
	var first time.Time
	for _, t := range []*time.Time{e.Ours.Marked, e.Upstream.Marked, e.Ours.NoExecuteAdded,
		e.Upstream.NoExecuteAdded, e.Ours.FirstEviction, e.Upstream.FirstEviction} {
		if t != nil && (first.IsZero() || t.Before(first)) {
			first = *t
		}
	}
	return first
}

// hasMark reports whether the node's open episode holds a side's mark.
func (r *Record) hasMark(node string, ours bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.open[node]
	return e != nil && e.side(ours).Marked != nil
}

// hasTaint reports whether the node's open episode holds a side's NoExecute
// taint.
func (r *Record) hasTaint(node string, ours bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.open[node]
	return e != nil && e.side(ours).NoExecute != ""
}

// hasPod reports whether the episode an eviction of the pod decided at the
// given time belongs to counts it as evicted by the other controller.
func (r *Record) hasPod(node, pod string, decided time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.episodeFor(node, decided)
	return e != nil && e.evicted[evictedPod{false, pod}]
}

// Restore adds episodes an earlier run kept before the Record's own. An
// open one stays open; what this run has already recorded of the same
// node's fault is merged into it.
func (r *Record) Restore(episodes []Episode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	restored := make([]*Episode, 0, len(episodes)+len(r.episodes))
	for i := range episodes {
		e := episodes[i]
		e.remember()
		if e.Ended == nil {
			if cur := r.open[e.Node]; cur != nil {
				e.absorb(cur)
				r.episodes = slices.DeleteFunc(r.episodes, func(x *Episode) bool { return x == cur })
			}
			r.open[e.Node] = &e
		}
		restored = append(restored, &e)
	}
	r.episodes = append(restored, r.episodes...)
	r.changed = true
	r.trim()
}

// touch marks the Record changed, so that a write that failed is tried
// again.
func (r *Record) touch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changed = true
}
