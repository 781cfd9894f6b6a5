// Package nodehealth holds the node health reconciler: it observes Node and
// Lease heartbeats, judges each node with the health package, marks a silent
// node Unknown at its grace deadline after confirming the silence with a live
// read, and keeps the condition-driven NoSchedule taints in line.
//
// Files: heartbeats.go hears Lease and Node events before the work queue;
// controller.go is the reconcile, which hands each look to the executor
// (internal/safety/act); port.go is the executor's way to the apiserver and
// the wakes; tell.go, events.go and metrics.go what a look reports;
// podmarks.go and pods.go the NotReady marking of pods; wake.go schedules
// every node's next look; setup.go the watches and the safety resync.
package nodehealth
