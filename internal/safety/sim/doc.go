// Package sim is a deterministic simulator of a cluster's nodes, kubelets,
// pods and apiserver around the safety model (package safety), on a virtual
// clock. It runs a sequence of faults (node deaths, recoveries and flaps,
// Ready=False, zones lost, partitions, maintenance set and cleared, pools
// paused and unpaused, apiserver outages, lagging watches, refused writes,
// lost wakes and leader failovers at any instant) and checks, after every
// step, the invariants the model promises against the simulator's ground
// truth: what each kubelet really did, and when.
//
// The simulator carries the model's decisions out with the executor the
// reconcilers run (package safety/act), through a port to its world: it
// marks, writes taints and countdown records, marks pods NotReady, evicts
// pods whose deadline passed where the model allows, keeps the partition
// freeze in the cluster, and looks at each node at the times the decisions
// ask for, on heartbeats, on the guard's changes and at the safety resync.
// Its only clock is the sequence's, and its only randomness comes from the
// seed, so that a failing sequence runs the same way every time.
package sim
