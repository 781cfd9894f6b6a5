// Package nodehealthpolicy keeps the NodeHealthPolicies in force for the
// other controllers (Source), and reports each policy's pool in its status
// (Reconciler): node counts, zone states, whether eviction is allowed and
// why not, and overlaps with other policies.
//
// The Source is the one owner of the policy state: it alone follows the
// policies' informer and refreshes the set (source.go), gives the
// disruption guard each pool's settings, and queues what a change affects
// in the controllers that subscribed (changes.go): the node health
// controller every node, the pod eviction controller the tainted nodes, and
// the status controller every policy.
package nodehealthpolicy
