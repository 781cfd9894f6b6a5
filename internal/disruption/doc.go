// Package disruption keeps a node failure from turning into a mass eviction.
//
// The rules are pure functions of counts and settings, with no state:
// zones.go names zones (ZoneKey, ZoneID), says what a node counts as in its
// zone and what a zone's counts make of it (ZoneStateOf: Normal,
// PartialDisruption, FullDisruption), and what NoExecute tainting rate each
// state allows (ZoneRate); pools.go holds the pool breaker's rule (poolHold).
//
// The state lives in small types, each with one concern and no lock:
//   - census (census.go): the nodes, and their counts and state per zone;
//   - Bucket (bucket.go): a token bucket on an explicit clock, and zoneQueue
//     (queue.go): a zone's line of nodes waiting for a NoExecute taint,
//     served one token of its bucket each;
//   - pools (pools.go): each pool's settings and its hold on its nodes;
//   - Freeze (freeze.go): the partition freeze, which stops destructive work
//     when too many heartbeats are lost at once, and clusterHold
//     (cluster.go): the freeze with the silences it counts, the halt while
//     every zone is down, and the wait after start.
//
// Guard (guard.go, taint.go, view.go) composes them into the per-cluster
// state the safety model consults, under the model's lock, and reports what
// each call changed.
package disruption
