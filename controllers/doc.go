// Package controllers runs the node lifecycle controllers in a
// controller-runtime manager. It is what the node-lifecycle-controller binary
// runs, and what an operator or a test suite imports to get real node
// lifecycle on its own apiserver:
//
//	mgr, err := controllers.NewManager(cfg, ctrl.Options{}, options.Default())
//	...
//	go mgr.Start(ctx)
//
// The controllers are configured with package pkg/options; the reconcilers
// themselves are internal. NewManager builds the manager, so it watches every
// request the controllers send: an apiserver that cannot be reached is not
// taken for the silence of every node, and eviction deadlines are measured on
// the apiserver's clock, read from its answers. With leader election it also
// holds back every write while its Lease may be another replica's by its own
// clock, as after a pause longer than the lease. SetupWithManager adds the
// controllers to a manager built elsewhere: it learns of outages and of the
// apiserver's clock from a probe of the apiserver instead, and holds back no
// write (see its documentation for the difference).
//
// The reconcilers it wires live in internal/controllers: the node health
// controller (nodehealth), which judges heartbeats, marks and taints nodes;
// the pod eviction controller (podeviction), which marks and evicts the pods
// of tainted nodes; and the NodeHealthPolicy status controller
// (nodehealthpolicy). They share one safety model and one view of the
// apiserver (its outages and its clock).
//
// A heartbeat's path: a Lease or Node event reaches the handler in
// internal/controllers/nodehealth/heartbeats.go, which records it in the
// tracker (internal/health/tracker.go) as the informer delivers it;
// internal/controllers/nodehealth/wake.go schedules the node's next look for
// its deadline; the reconcile in internal/controllers/nodehealth/controller.go
// hands the node to the executor (internal/safety/act), which asks the safety
// model (internal/safety) and carries its decision out through
// internal/controllers/nodehealth/port.go: the live read and the mark, the
// node's taints, its next look; internal/controllers/nodehealth/podmarks.go
// queues the node's pods, which the executor marks NotReady on their own
// workers; internal/controllers/podeviction/controller.go deletes them where
// the model lets them go, at the deadline internal/eviction/deadline.go
// computes. Policies reach every controller through one owner,
// internal/controllers/nodehealthpolicy/source.go.
package controllers
