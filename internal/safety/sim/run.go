package sim

import "time"

// Run runs a sequence on a fresh world and returns the first invariant it
// breaks, or nil.
func Run(cfg Config, seq Sequence) *Violation {
	_, v := run(cfg, seq)
	return v
}

// run runs a sequence, and returns what the observer saw with the first
// invariant broken, if any.
func run(cfg Config, seq Sequence) (*observer, *Violation) {
	w := newWorld(cfg)
	obs := newObserver(w)
	cs := &controllers{w: w, obs: obs}
	cs.leader = newController(w, obs, w.now)
	var last time.Duration
	for _, e := range seq {
		last = max(last, e.At+e.For)
	}
	end := t0.Add(last + cfg.Settle)
	next := 0
	for ; !w.now.After(end); w.now = w.now.Add(cfg.Step) {
		for next < len(seq) && !t0.Add(seq[next].At).After(w.now) {
			w.apply(seq[next], cs)
			next++
		}
		w.endsDue()
		renewed := w.actKubelets()
		changed := w.heard()
		for _, c := range []*controller{cs.leader, cs.old} {
			if c == nil {
				continue
			}
			c.hear(changed, renewed)
			c.resync()
			c.lookDue()
		}
		cs.leader.evict()
		obs.step(cs)
		if obs.violation != nil {
			return obs, obs.violation
		}
	}
	obs.final()
	return obs, obs.violation
}

// Shrink returns a shorter sequence that still breaks the same invariant:
// it drops events one at a time, keeping each drop that still fails, until
// none can go.
func Shrink(cfg Config, seq Sequence, v *Violation) Sequence {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(seq); i++ {
			shorter := append(append(Sequence{}, seq[:i]...), seq[i+1:]...)
			if got := Run(cfg, shorter); got != nil && got.Invariant == v.Invariant {
				seq = shorter
				changed = true
				i--
			}
		}
	}
	return seq
}
