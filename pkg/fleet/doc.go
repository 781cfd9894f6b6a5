// Package fleet runs simulated nodes against a real apiserver: each node is a
// reporter (package pkg/reporter) writing its Lease and status the way
// a kubelet does, all through one shared heartbeat client. Pods bound to the
// nodes, if asked for, go through a client and connection of their own, so
// that they never hold a heartbeat back. Test suites use it
// to give envtest, which has no kubelets, nodes that live, die and recover:
//
//	f, err := fleet.Start(ctx, cfg, fleet.Options{Nodes: 6, Zones: 3})
//	defer f.Close()
//	f.Stop(f.Nodes()[0])  // its heartbeats stop; the controller marks it
//	f.Resume(f.Nodes()[0]) // it reports again and recovers
//
// SetCondition and ClearCondition write a node's conditions as an
// administrator or a maintenance operator would (MaintenanceInProgress
// before a reboot); the reporters leave such conditions as they are.
//
// The fleet also runs as a command, for demos and scale tests; see
// pkg/fleet/cmd/fleet.
package fleet
