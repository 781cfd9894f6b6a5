// Package reporter writes a node's heartbeats the way the kubelet does: it
// registers the Node, renews the node's Lease in kube-node-lease, and keeps
// the Node's status current.
//
// A Reporter runs two loops. The lease loop renews the Lease every
// RenewIntervalFraction x LeaseDurationSeconds; the Lease is what the node
// lifecycle controller mostly watches, so it is cheap (an UPDATE of the
// object kept from the previous write, no GET) and retried hard when it
// fails. The status loop computes the status every NodeStatusUpdateFrequency
// from pluggable StatusSetters, against the Node as a watch of that one Node
// shows it (no GET, as the kubelet reads its Node from its informer), but
// patches the Node only when something meaningful changed or
// NodeStatusReportFrequency has passed, which keeps writes to Nodes, the
// heaviest objects in a large cluster, rare. Like the kubelet's, a report of
// a change shifts the next unchanged one by up to half that interval either
// way, at random, so that nodes registered or recovered together spread
// their reports.
//
// Everything is timed by an injected clock, so a fleet of thousands of
// reporters can share one process and one client (see NewHeartbeatClient),
// spread their renewals with StartOffset, and be paused and resumed one by
// one to simulate dead kubelets and partitions; tests drive them with a fake
// clock.
package reporter
