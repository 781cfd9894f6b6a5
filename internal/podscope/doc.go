// Package podscope is where the node lifecycle controllers read pods and
// hear of their changes.
//
// The controllers act only on the pods of nodes that are not Ready, that
// carry a NoExecute taint, or whose deadline has just passed. Scoped watches
// the pods of those nodes alone, one watch per node selected by
// spec.nodeName (which the apiserver serves from its watch cache, as it does
// for every kubelet), and falls back to one watch of every pod while more
// nodes than its limit need theirs. Cluster watches every pod through the
// manager's cache, as kube-controller-manager does; a dry run uses it.
//
// Neither ever answers for a node whose pods it has not listed: On returns
// ErrNotListed, and the node is queued again, through every Source, once
// they are.
package podscope
