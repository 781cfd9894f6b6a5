// Package nodehealth holds the node health reconciler: it observes Node and
// Lease heartbeats, judges each node with the health package, marks a silent
// node Unknown at its grace deadline after confirming the silence with a live
// read, and keeps the condition-driven NoSchedule taints in line.
package nodehealth
