package podeviction

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// deletionMemory is how long a deleted pod is remembered when the
	// cache never shows it deleting (a pod removed at once, with no grace
	// period).
	deletionMemory = 10 * time.Minute
	// The backoff of a pod whose eviction failed doubles from retryBase at
	// each failure, up to retryMax.
	retryBase = 100 * time.Millisecond
	retryMax  = 2 * time.Minute
)

// attempts remembers what became of the evictions of pods the cache still
// shows as they were. A pod deleted is remembered until the cache shows it
// deleting: its status patch and its deletion reach the cache as two
// events, and a reconcile that runs between them must not delete it a
// second time. A pod whose eviction failed is on a backoff of its own:
// returning the error instead would put the whole node on the work queue's
// backoff, and one pod whose deletion keeps failing (a webhook refusing
// it) would hold its node's other pods past their deadlines, by up to the
// queue's cap of 1000s. Hand-written rather than apimachinery's
// cache.Expiring or client-go's flowcontrol.Backoff, which read clocks of
// their own: the reconciler derives all its times from one now on the
// apiserver's clock.
type attempts struct {
	mu   sync.Mutex
	pods map[types.UID]attempt
}

type attempt struct {
	// deleted is when the pod was deleted; zero while it was not.
	deleted time.Time
	// failures counts its failed evictions in a row, and retry is when it
	// may be tried again.
	failures int
	retry    time.Time
}

// deleted records that the pod was deleted at now.
func (a *attempts) deleted(uid types.UID, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.put(uid, attempt{deleted: now})
}

// failed records a failed eviction at now and returns when to try again.
func (a *attempts) failed(uid types.UID, now time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pods[uid]
	delay := retryMax
	if p.failures < 16 {
		delay = min(retryBase<<p.failures, retryMax)
	}
	p.failures++
	p.retry = now.Add(delay)
	a.put(uid, p)
	return p.retry
}

// of returns whether the pod was deleted and the cache does not show it
// deleting yet, and when it may be tried again (zero for now, or never
// tried).
func (a *attempts) of(uid types.UID, now time.Time) (deleted bool, retry time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pods[uid]
	if p.retry.After(now) {
		retry = p.retry
	}
	return !p.deleted.IsZero(), retry
}

// forget drops a pod the cache shows deleting, or that is gone.
func (a *attempts) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pods, uid)
}

// prune forgets the pods deleted longer than deletionMemory before now,
// and those not tried for longer than the longest backoff, whose eviction
// someone else settled.
func (a *attempts) prune(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, p := range a.pods {
		if p.deleted.IsZero() && now.Sub(p.retry) > retryMax || !p.deleted.IsZero() && now.Sub(p.deleted) > deletionMemory {
			delete(a.pods, uid)
		}
	}
}

// put records a pod's attempt. Called with mu held.
func (a *attempts) put(uid types.UID, p attempt) {
	if a.pods == nil {
		a.pods = make(map[types.UID]attempt)
	}
	a.pods[uid] = p
}
