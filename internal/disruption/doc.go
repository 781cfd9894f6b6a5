// Package disruption keeps a node failure from turning into a mass eviction.
// It holds the pure rules: zone keys and zone states (Normal,
// PartialDisruption, FullDisruption), the NoExecute tainting rate each state
// allows, a token bucket driven by an explicit clock, and the partition
// freeze that stops destructive work when too many heartbeats are lost at
// once. Guard combines them into the per-cluster state the controllers
// consult.
package disruption
