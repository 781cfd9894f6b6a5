package podeviction

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// deletionMemory is how long a deleted pod is remembered when the cache
// never shows it deleting (a pod removed at once, with no grace period).
const deletionMemory = 10 * time.Minute

// deletions remembers the pods this controller deleted until its cache shows
// them deleting. A pod's status patch and its deletion reach the cache as two
// events, and a reconcile that runs between them must not delete the pod a
// second time. It is hand-written rather than apimachinery's cache.Expiring
// because that reads a clock.Clock of its own on every call, where the
// reconciler has a PassiveClock and derives all its times from one now.
type deletions struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// done records that the pod with uid was deleted at now.
func (d *deletions) done(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = make(map[types.UID]time.Time)
	}
	d.at[uid] = now
}

// pending reports whether the pod with uid was deleted and the cache does not
// show it yet.
func (d *deletions) pending(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.at[uid]
	return ok
}

// seen forgets a pod the cache shows deleting.
func (d *deletions) seen(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, uid)
}

// prune forgets the pods deleted longer than deletionMemory before now.
func (d *deletions) prune(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for uid, at := range d.at {
		if now.Sub(at) > deletionMemory {
			delete(d.at, uid)
		}
	}
}
