package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is what an event does to the world.
type Kind uint8

// The kinds of event.
const (
	// Kill stops a node's kubelet: no heartbeat lands from then on.
	Kill Kind = iota
	// Revive starts a node's kubelet again, reporting Ready.
	Revive
	// NotReady has a live kubelet report Ready=False.
	NotReady
	// Flap kills a node, and revives it For later.
	Flap
	// ZoneLoss kills every node of a zone.
	ZoneLoss
	// Partition kills the listed nodes at once, and revives them For later
	// (For zero: never).
	Partition
	// MaintenanceOn sets a node's MaintenanceInProgress condition True.
	MaintenanceOn
	// MaintenanceOff clears it.
	MaintenanceOff
	// Pause pauses the pool's policy; Unpause lifts the pause.
	Pause
	Unpause
	// Outage takes the apiserver away for For: nothing lands, nothing is
	// read or written.
	Outage
	// Lag delays every watch event of a node by For, until For has passed.
	Lag
	// RefuseWrites has every write of the controller refused for For.
	RefuseWrites
	// LoseWake drops the node's next look, as a wake lost to a race would.
	LoseWake
	// Failover kills the leader; a new one starts from the cluster alone.
	Failover
	// Deny has the controller's patches of one Node (its taints and
	// records; its status is written) refused for For (zero: to the end),
	// as an admission policy that denies them would.
	Deny
	// PodsReady has another writer than the controller set a node's pods
	// Ready, whatever the node's state: a kubelet whose pod status updates
	// land while its node status and Lease do not.
	PodsReady
)

var kindNames = [...]string{"Kill", "Revive", "NotReady", "Flap", "ZoneLoss", "Partition", "MaintenanceOn",
	"MaintenanceOff", "Pause", "Unpause", "Outage", "Lag", "RefuseWrites", "LoseWake", "Failover", "Deny", "PodsReady"}

func (k Kind) String() string { return kindNames[k] }

// Event is one fault, at a time from the sequence's start.
type Event struct {
	At    time.Duration
	Kind  Kind
	Node  int
	Zone  int
	Nodes []int
	For   time.Duration
}

// String reads as a line of a sequence.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6s %s", e.At, e.Kind)
	switch e.Kind {
	case Kill, Revive, NotReady, MaintenanceOn, MaintenanceOff, LoseWake, PodsReady:
		fmt.Fprintf(&b, " node-%d", e.Node)
	case Flap, Lag:
		fmt.Fprintf(&b, " node-%d for %s", e.Node, e.For)
	case Deny:
		fmt.Fprintf(&b, " node-%d", e.Node)
		if e.For > 0 {
			fmt.Fprintf(&b, " for %s", e.For)
		}
	case ZoneLoss:
		fmt.Fprintf(&b, " zone-%d", e.Zone)
	case Partition:
		fmt.Fprintf(&b, " %d nodes %v", len(e.Nodes), e.Nodes)
		if e.For > 0 {
			fmt.Fprintf(&b, " for %s", e.For)
		}
	case Outage, RefuseWrites:
		fmt.Fprintf(&b, " for %s", e.For)
	}
	return b.String()
}

// Sequence is a run's events, in time order.
type Sequence []Event

// String lists the events, one a line.
func (s Sequence) String() string {
	lines := make([]string, len(s))
	for i, e := range s {
		lines[i] = "  " + e.String()
	}
	return strings.Join(lines, "\n")
}

// Generate returns the random sequence of a seed: events spread over
// length, drawn so that every kind comes up often, and faults pile up as
// they do on a bad day.
func Generate(cfg Config, seed uint64, length time.Duration) Sequence {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var seq Sequence
	steps := int(length / cfg.Step)
	// About one event every 15 seconds of virtual time.
	n := 1 + rng.IntN(max(1, steps/15))
	for range n {
		at := time.Duration(rng.IntN(steps)) * cfg.Step
		seq = append(seq, randomEvent(cfg, rng, at))
	}
	sortSequence(seq)
	return seq
}

func randomEvent(cfg Config, rng *rand.Rand, at time.Duration) Event {
	node := rng.IntN(cfg.Nodes)
	secs := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Second }
	switch r := rng.IntN(100); {
	case r < 16:
		return Event{At: at, Kind: Kill, Node: node}
	case r < 28:
		return Event{At: at, Kind: Revive, Node: node}
	case r < 36:
		return Event{At: at, Kind: NotReady, Node: node}
	case r < 46:
		return Event{At: at, Kind: Flap, Node: node, For: secs(1, 60)}
	case r < 50:
		return Event{At: at, Kind: ZoneLoss, Zone: rng.IntN(cfg.Zones)}
	case r < 55:
		k := cfg.Nodes/2 + rng.IntN(cfg.Nodes/2+1)
		nodes := rng.Perm(cfg.Nodes)[:k]
		var d time.Duration
		if rng.IntN(2) == 0 {
			d = secs(5, 120)
		}
		return Event{At: at, Kind: Partition, Nodes: nodes, For: d}
	case r < 62:
		return Event{At: at, Kind: MaintenanceOn, Node: node}
	case r < 67:
		return Event{At: at, Kind: MaintenanceOff, Node: node}
	case r < 71:
		return Event{At: at, Kind: Pause}
	case r < 75:
		return Event{At: at, Kind: Unpause}
	case r < 80:
		return Event{At: at, Kind: Outage, For: secs(1, 40)}
	case r < 85:
		return Event{At: at, Kind: Lag, Node: node, For: secs(1, 30)}
	case r < 87:
		return Event{At: at, Kind: RefuseWrites, For: secs(1, 20)}
	case r < 89:
		return Event{At: at, Kind: Deny, Node: node, For: secs(5, 300)}
	case r < 94:
		return Event{At: at, Kind: LoseWake, Node: node}
	case r < 98:
		return Event{At: at, Kind: Failover}
	default:
		return Event{At: at, Kind: PodsReady, Node: node}
	}
}

func sortSequence(seq Sequence) {
	// Insertion sort keeps events of one time in the order drawn.
	for i := 1; i < len(seq); i++ {
		for j := i; j > 0 && seq[j].At < seq[j-1].At; j-- {
			seq[j], seq[j-1] = seq[j-1], seq[j]
		}
	}
}
