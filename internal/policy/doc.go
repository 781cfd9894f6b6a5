// Package policy turns NodeHealthPolicy objects into the settings each node
// follows: which policy a node's pool is, and its grace periods, eviction
// timeout and disruption settings, with every field a policy leaves unset
// taken from the controller's flags. Everything here is a pure function of
// objects; the controllers keep the current result.
package policy
