// Package maintenance reads what a node's maintenance conditions say about
// its silence.
//
// Kubernetes 1.37 lets an administrator, or a maintenance operator, set
// MaintenanceInProgress, GracefulNodeShutdownInProgress and Drained on a
// Node. A node carrying one of them True is going quiet on purpose: it is
// still marked and kept off the scheduler when it stops heartbeating, but
// its NoExecute taint and its pods' evictions wait for a maintenance grace,
// and it counts towards no zone, pool breaker or partition freeze. Of is a
// pure function of the node, the grace and the clock skew, so a new leader
// or a restarted process reads the same window from the cluster.
package maintenance
