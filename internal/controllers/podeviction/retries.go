package podeviction

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The backoff of a pod whose eviction failed: it doubles from retryBase at
// each failure, up to retryMax.
const (
	retryBase = 100 * time.Millisecond
	retryMax  = 2 * time.Minute
)

// retries spaces out the attempts on pods whose eviction failed, each pod
// on a backoff of its own. Returning the error instead would put the whole
// node on controller-runtime's backoff, which drops the requeue for the
// next deadline: one pod whose deletion keeps failing (a webhook refusing
// it) would hold its node's other pods past their deadlines, by up to the
// queue's cap of 1000s. It is hand-written rather than client-go's
// flowcontrol.Backoff because it runs on the reconciler's passive clock, the
// apiserver's.
type retries struct {
	mu   sync.Mutex
	pods map[types.UID]retry
}

type retry struct {
	failures int
	at       time.Time
}

// failed records a failed eviction at now and returns when to try again.
func (r *retries) failed(uid types.UID, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = make(map[types.UID]retry)
	}
	p := r.pods[uid]
	delay := retryMax
	if p.failures < 16 {
		delay = min(retryBase<<p.failures, retryMax)
	}
	p.failures++
	p.at = now.Add(delay)
	r.pods[uid] = p
	return p.at
}

// notBefore returns when the pod may be tried again, or the zero time when
// it may be now, or was never tried.
func (r *retries) notBefore(uid types.UID, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pods[uid]; ok && p.at.After(now) {
		return p.at
	}
	return time.Time{}
}

// forget drops a pod that was evicted or is gone.
func (r *retries) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, uid)
}

// prune forgets the pods not tried for longer than the longest backoff,
// whose eviction someone else settled.
func (r *retries) prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, p := range r.pods {
		if now.Sub(p.at) > retryMax {
			delete(r.pods, uid)
		}
	}
}
