// Package health decides whether a node is alive.
//
// Liveness comes from two heartbeats: a change of the node's Lease spec in
// kube-node-lease, and a change of the heartbeat time of the node's Ready
// condition. Either one counts. The Tracker times each heartbeat on the
// controller's own clock when it first observes the change, so the clocks of
// the nodes are never compared with the controller's: a node whose clock is
// skewed, or jumps backwards, is judged only by whether it keeps changing.
// The one comparison is between a copy the cache shows and a heartbeat a live
// read showed first: until the watch delivers that one, an older copy is from
// before the read, not a heartbeat.
//
// Judge turns a node, its last observed heartbeat and the grace periods into a
// Verdict. It is a pure function of its arguments, so every rule is tested by
// table without a cluster.
package health
