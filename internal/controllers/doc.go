// Package controllers wires the node lifecycle reconcilers into a manager:
// the node health controller (nodehealth), which judges heartbeats, marks
// and taints nodes; the pod eviction controller (podeviction), which marks
// and evicts the pods of tainted nodes; and the NodeHealthPolicy status
// controller (nodehealthpolicy). They share one safety model and one
// view of the apiserver (Sight: its outages and its clock). The public
// package controllers is the entry point; this one is its implementation.
//
// A heartbeat's path: a Lease or Node event reaches the handler in
// nodehealth/heartbeats.go, which records it in the tracker
// (internal/health/tracker.go) as the informer delivers it; nodehealth/wake.go
// schedules the node's next look for its deadline; the reconcile in
// nodehealth/controller.go hands the node to the executor
// (internal/safety/act), which asks the safety model (internal/safety) and
// carries its decision out through nodehealth/port.go: the live read and the
// mark, the node's taints, its next look; nodehealth/podmarks.go queues the
// node's pods, which the executor marks NotReady on their own workers;
// podeviction/controller.go deletes them where the model lets them go, at the
// deadline internal/eviction/deadline.go computes. Policies reach every
// controller through one owner, nodehealthpolicy/source.go.
package controllers
