package safety

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// Tick re-evaluates what changes with time alone: the nodes going quiet
// within the freeze window, and whether every node is known well enough to
// end the wait after start. It returns what changed, and the nodes fading:
// silent for at least half their grace (health.Quiet), those a look may
// soon mark, or has. While the apiserver is out of reach (blind) nothing is
// re-evaluated and none is fading: no heartbeat could be seen, and the time
// will be excused from every node's silence once it answers.
func (m *Model) Tick(now time.Time, blind bool) (disruption.Change, []string) {
	m.turn.Lock()
	defer m.turn.Unlock()
	return m.tick(now, blind)
}

// tick is Tick within a decision.
func (m *Model) tick(now time.Time, blind bool) (disruption.Change, []string) {
	c := merge(m.takePending(), m.guard.SetBlind(blind, now))
	if blind {
		return c, nil
	}
	q := m.tracker.Quiet(now, m.window)
	return merge(c, m.guard.TickSooner(q.Fading, q.FadingSooner, q.Decided, now)), q.Fading
}

// Remove forgets a node that no longer exists, and returns what the guard
// changed and what the tracker knew of it.
func (m *Model) Remove(name string, now time.Time) (disruption.Change, Forgotten) {
	m.turn.Lock()
	defer m.turn.Unlock()
	c := m.guard.Remove(name, now)
	delete(m.pods, name)
	delete(m.tainted, name)
	delete(m.confirmed, name)
	delete(m.graces, name)
	delete(m.unseen, name)
	for key := range m.untimed {
		if key.node == name {
			delete(m.untimed, key)
		}
	}
	uid, state, ok := m.tracker.Forget(name)
	return c, Forgotten{Known: ok, UID: uid, State: state}
}

// Forgotten is what the model knew of a node it forgot.
type Forgotten struct {
	// Known is false for a node the tracker never saw.
	Known bool
	UID   types.UID
	State health.State
}

// Unseen returns the nodes the seed listed that no look has observed yet:
// the resync looks at them, since a first look lost leaves a node unknown
// to the tracker, neither timed nor counted fading. Once every node has
// been looked at, none.
func (m *Model) Unseen() []string {
	m.turn.Lock()
	defer m.turn.Unlock()
	if len(m.unseen) == 0 {
		return nil
	}
	return slices.Collect(maps.Keys(m.unseen))
}

// Candidates returns the nodes the safety resync checks against what the
// model wants of them (Stray): those not judged healthy, and those last seen
// with a lifecycle NoExecute taint. In a healthy cluster, a handful.
func (m *Model) Candidates() []string {
	names := m.tracker.NotHealthy()
	m.turn.Lock()
	defer m.turn.Unlock()
	for name := range m.tainted {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// Stray reports whether a node, as the cluster shows it, is short of what
// the model wants of it with nothing to wait for: one that needs its
// lifecycle NoExecute taint, lacks it, and is neither held nor waiting for
// its zone's turn; one the guard counts as held for a maintenance whose
// grace has run out since it was last looked at, tainted or not, whatever
// else holds it; or one Ready again that keeps the taint. The safety
// resync looks at such nodes again, whatever wakes were lost.
func (m *Model) Stray(node *corev1.Node, s policy.Settings, now time.Time) bool {
	m.turn.Lock()
	defer m.turn.Unlock()
	m.seenTaint(node)
	want := WantedNoExecute(node)
	if want == "" {
		return lifecycleNoExecute(node) != nil
	}
	if m.guard.InMaintenance(node.Name) {
		// Its grace ending changes what the guard counts, whatever else
		// holds the node, and whether its taint is on (a hold whose
		// removal failed) or off.
		if _, held := m.maintenance(node, s, now); !held {
			return true
		}
	}
	if HasNoExecute(node, want) {
		return false
	}
	return m.guard.Hold(node.Name) == "" && !m.guard.Waiting(node.Name)
}

// seenTaint records whether the node carries a lifecycle NoExecute taint.
func (m *Model) seenTaint(node *corev1.Node) {
	has := lifecycleNoExecute(node) != nil
	if has {
		m.tainted[node.Name] = struct{}{}
	} else {
		delete(m.tainted, node.Name)
	}
}
