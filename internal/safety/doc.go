// Package safety is where the node lifecycle rules meet: one Model owns the
// safety state (the heartbeats heard, the disruption guard, the pods marked
// in each silence) and answers each look at a node with one Decision, a
// plain value that says what the node's verdict is, whether to mark it,
// which NoExecute taint it should carry and from when, whether its pods are
// to be marked NotReady, when to look again, and why anything is held.
//
// The reconcilers read and write and tell; they decide nothing. The model
// is a function of what it was told and of the times it is given, with no
// clock of its own, so that a simulator can drive it through many fault
// sequences on a virtual clock (package safety/sim).
//
// # Holds and countdowns
//
// A hold (a partition freeze, every zone down, a pool's pause, breaker or
// halted zone, a policy not in force, a node's maintenance) pauses the
// eviction countdown of the nodes it holds, and never restarts it:
//   - the node loses its lifecycle NoExecute taint, so that nothing is
//     evicted while the hold lasts and the cluster shows that it is held;
//   - the time the countdown had served is written on the Node
//     (AnnotationCountdown) in the same patch;
//   - when the hold lifts, the taint comes back at the node's turn in its
//     zone's queue, with its timeAdded set back by the time served, so that
//     each pod's deadline is where it was when the hold began, moved on by
//     the hold's length.
//
// A node that reports Ready again ends its episode: the taint and the record
// go, and a later failure starts a countdown of its own. Pods are marked
// NotReady when the controller itself finds the node silent (Ready
// Unknown), each pod once in that episode; a kubelet that reports Ready=False
// keeps its pods' readiness, as kube-controller-manager leaves it.
package safety
