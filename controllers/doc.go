// Package controllers wires the node lifecycle reconcilers into a
// controller-runtime manager. It is the entry point both for the
// node-lifecycle-controller binary and for test suites that want real node
// lifecycle on an envtest apiserver:
//
//	mgr, _ := controllers.NewManager(cfg, ctrl.Options{}, controllers.DefaultOptions())
//	go mgr.Start(ctx)
//
// SetupWithManager adds them to a manager built elsewhere; it cannot watch
// that manager's requests, so an apiserver outage then counts as the
// silence of every node unless Options.Sight is set up by hand.
package controllers
