// Package shadow runs the node lifecycle controllers in a dry run beside
// the controller that really decides, kube-controller-manager's most often,
// and records where the two differ.
//
// A dry run must decide as the controllers would if they were the only ones:
// a NoExecute taint the other controller added must not be taken for one of
// its own, nor a node the other marked Unknown for one it marked. The View
// therefore shows each Node and Pod as this controller would have left it:
// the kubelet's writes and the administrator's are seen as they are, the
// node lifecycle conditions and taints as this controller would have
// written them, starting from the cluster as it found it. The Client reads
// through the View and writes nothing to the apiserver: a write to a Node or
// a Pod changes the View and goes to the Record, as the other controller's
// writes, seen by Watch, do on their side.
package shadow
