// Package eviction decides when a pod on a node with NoExecute taints must
// go. Deadlines are computed only from state stored in the cluster (the
// taints' timeAdded and the pods' tolerations), so a restarted controller or
// a new leader reaches the same deadlines as the one before it.
package eviction
