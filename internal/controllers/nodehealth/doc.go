// Package nodehealth holds the node health reconciler: it observes Node and
// Lease heartbeats, judges each node with the health package, marks a silent
// node Unknown at its grace deadline after confirming the silence with a live
// read, and keeps the condition-driven NoSchedule taints in line.
//
// Files: heartbeats.go hears Lease and Node events before the work queue;
// controller.go is the reconcile; mark.go the mark and its live read;
// noexecute.go and guard.go the NoExecute taints and the disruption guard;
// pods.go the NotReady marking of pods; wake.go schedules every node's next
// look; events.go and metrics.go what it reports; setup.go the watches and
// the safety resync.
package nodehealth
