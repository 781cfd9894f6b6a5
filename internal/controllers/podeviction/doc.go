// Package podeviction holds the pod eviction reconciler, the replacement for
// kube-controller-manager's taint-eviction-controller. For each node with
// NoExecute taints it computes every pod's deadline from the taints'
// timeAdded and the pod's tolerations (package eviction), deletes the pods
// whose deadline has passed, and asks to be called again at the next one.
// Because deadlines come from the cluster's own state, a restart or a leader
// change neither restarts nor forgets a pending eviction, and a taint that
// goes away cancels exactly the evictions it caused.
package podeviction
