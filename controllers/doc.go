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
package controllers
