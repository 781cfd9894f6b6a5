// Package leadergate keeps a replica from writing to the apiserver once its
// leader election Lease may belong to another replica.
//
// client-go's leader elector learns that it lost the Lease only when a
// renewal fails for a whole renew deadline, and it learns that on its own
// goroutine. A process that was stopped past the lease duration (a SIGSTOP,
// a long garbage collection, a paused VM) wakes up believing it leads: its
// reconcilers act at once, on a cache that is seconds old, beside the
// replica that took over meanwhile, until the elector gives up a renew
// deadline later. What they write then undoes the new leader's work: a
// taint removed and added again restarts the eviction countdown of every
// pod on the node.
//
// A Gate holds the rule instead: the process writes only while its Lease is
// valid by its own clock. It learns when the Lease was last made ours from
// the lock itself (Gate.Lock wraps it), and refuses, in the client's
// transport (Gate.Wrap), every request that would change something, from
// any goroutine, once that time is too far back. The lock's own client must
// not go through the Gate: the elector has to keep renewing, and noticing
// that it cannot.
package leadergate
