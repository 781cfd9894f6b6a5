package sim

import (
	"flag"
	"testing"
	"time"
)

var (
	sequences = flag.Int("sim.sequences", 1000, "how many random sequences TestRandomSequences runs")
	firstSeed = flag.Uint64("sim.seed", 1, "the seed of the first sequence; the others follow it")
	length    = flag.Duration("sim.length", 5*time.Minute, "the virtual time over which each sequence's events are spread")
)

// TestRandomSequences runs random fault sequences and checks every
// invariant after every step. A failure prints the seed and the shortest
// sequence found that still fails; -sim.seed reruns it.
func TestRandomSequences(t *testing.T) {
	for i := range uint64(*sequences) {
		seed := *firstSeed + i
		cfg := ConfigFor(seed)
		seq := Generate(cfg, seed, *length)
		if v := Run(cfg, seq); v != nil {
			short := Shrink(cfg, seq, v)
			t.Fatalf("seed %d: %v\nshortened to %d of %d events, which still fail:\n%s\n(rerun with -sim.seed=%d -sim.sequences=1)",
				seed, Run(cfg, short), len(short), len(seq), short, seed)
		}
	}
}
