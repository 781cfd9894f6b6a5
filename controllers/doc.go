// Package controllers wires the node lifecycle reconcilers into a
// controller-runtime manager. It is the entry point both for the
// node-lifecycle-controller binary and for test suites that want real node
// lifecycle on an envtest apiserver:
//
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{Cache: controllers.CacheOptions()})
//	_ = controllers.SetupWithManager(mgr, controllers.DefaultOptions())
//	go mgr.Start(ctx)
package controllers
