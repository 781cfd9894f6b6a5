// Package status answers "why is this node not ready, and when will its
// pods go": from the Nodes, Leases, pods and policies in a cluster it builds
// a report of every zone's state and, for each unhealthy node, its
// heartbeat age, verdict, taints, and each pod's eviction deadline with
// what decides it. Building the report is a pure function of those objects
// and the time; the status subcommand gathers them and prints it.
package status
