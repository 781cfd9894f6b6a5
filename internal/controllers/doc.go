// Package controllers wires the node lifecycle reconcilers into a manager:
// the node health controller (nodehealth), which judges heartbeats, marks
// and taints nodes; the pod eviction controller (podeviction), which marks
// and evicts the pods of tainted nodes; and the NodeHealthPolicy status
// controller (nodehealthpolicy). They share one disruption guard and one
// view of the apiserver (Sight: its outages and its clock). The public
// package controllers is the entry point; this one is its implementation.
//
// A heartbeat's path: a Lease or Node event reaches the handler in
// nodehealth/heartbeats.go, which records it in the tracker
// (internal/health/tracker.go) as the informer delivers it; nodehealth/wake.go
// schedules the node's next look for its deadline; the reconcile in
// nodehealth/controller.go judges the node (internal/health/verdict.go), and
// nodehealth/mark.go writes the mark (internal/health/conditions.go);
// nodehealth/guard.go tells the disruption guard (internal/disruption),
// which nodehealth/noexecute.go asks before it taints the node NoExecute;
// nodehealth/podmarks.go queues the node's pods, which its own workers
// mark NotReady (nodehealth/pods.go);
// podeviction/controller.go deletes them at the deadline
// internal/eviction/deadline.go computes. Policies reach every controller
// through one owner, nodehealthpolicy/source.go.
package controllers
