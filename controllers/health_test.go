package controllers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/leadergate"
)

// memoryLock is a Lease held in memory, always this process's.
type memoryLock struct{ resourcelock.Interface }

func (memoryLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (memoryLock) Identity() string                                                { return "me" }

func TestLeaseCheckFailsOnlyForALeaderWhoseLeaseLapsedLong(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))
	gate := leadergate.New(clk, 10*time.Second)
	elected := make(chan struct{})
	check := leaseCheck(elected, gate, clk)
	req, _ := http.NewRequest(http.MethodGet, "/livez", nil)

	clk.Step(time.Hour)
	if err := check(req); err != nil {
		t.Fatalf("a replica waiting for the Lease fails: %v", err)
	}
	if err := gate.Lock(memoryLock{}).Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	close(elected)
	if err := check(req); err != nil {
		t.Fatalf("a leader with its Lease fails: %v", err)
	}
	// The Lease is valid for 10s after the renewal; it lapses, and stays
	// lapsed for the tolerance.
	clk.Step(10*time.Second + LeaseLapseTolerance)
	if err := check(req); err != nil {
		t.Fatalf("a leader whose Lease lapsed just %v ago fails: %v", LeaseLapseTolerance, err)
	}
	clk.Step(time.Second)
	err := check(req)
	if err == nil || !strings.Contains(err.Error(), "lapsed 21s ago") {
		t.Fatalf("a leader whose Lease lapsed 21s ago: %v, want it to fail and say so", err)
	}
}

// cachedManager is a manager with only a cache.
type cachedManager struct {
	ctrl.Manager
	cache cache.Cache
}

func (m cachedManager) GetCache() cache.Cache { return m.cache }

func TestCacheSyncCheckFailsUntilTheCachesSync(t *testing.T) {
	informers := &informertest.FakeInformers{Synced: ptr.To(false)}
	check := cacheSyncCheck(cachedManager{cache: informers})
	req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
	if err := check(req); err == nil {
		t.Fatal("passes before the caches synced")
	}
	informers.Synced = ptr.To(true)
	if err := check(req); err != nil {
		t.Fatalf("fails once the caches synced: %v", err)
	}
}
