package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/leadergate"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/probes"
)

// LeaseLapseTolerance is how long a leader's Lease may have lapsed, by its
// own clock, before its health check fails: kube-controller-manager's
// tolerance for a leader that has not renewed.
const LeaseLapseTolerance = 20 * time.Second

// Manager is the manager NewManager returns: a controller-runtime manager
// that also tells how the controllers fare, for the probes of the process
// that runs them. Each check, when asked, sets the metric
// node_lifecycle_healthcheck of its name.
type Manager interface {
	ctrl.Manager
	// HealthChecks returns the checks that tell whether the process is
	// alive and ready. NewManager has added them to the manager too
	// (AddHealthzCheck, AddReadyzCheck), so that its probe server, when
	// one is bound, serves them.
	HealthChecks() HealthChecks
}

// HealthChecks are named health checks, as /livez, /readyz and /healthz
// serve them.
type HealthChecks struct {
	// Live fail when the process should be restarted: "leader-election"
	// fails when the process has led and its Lease has lapsed, by its own
	// clock, for longer than LeaseLapseTolerance, yet it goes on.
	Live map[string]healthz.Checker
	// Ready are Live's, and "informer-sync", which fails while the
	// caches the running controllers read have not synced.
	Ready map[string]healthz.Checker
}

// All returns every check, Live's and Ready's, as /healthz serves them.
func (h HealthChecks) All() map[string]healthz.Checker {
	all := make(map[string]healthz.Checker, len(h.Live)+len(h.Ready))
	for name, c := range h.Live {
		all[name] = c
	}
	for name, c := range h.Ready {
		all[name] = c
	}
	return all
}

// checkedManager is a controller-runtime manager with its health checks.
type checkedManager struct {
	ctrl.Manager
	checks HealthChecks
}

// HealthChecks implements Manager.
func (m *checkedManager) HealthChecks() HealthChecks { return m.checks }

// withHealthChecks returns mgr with its health checks, added to mgr as
// well. gate is the leader election's, nil without leader election.
func withHealthChecks(mgr ctrl.Manager, gate *leadergate.Gate, clk clock.PassiveClock) (Manager, error) {
	live := map[string]healthz.Checker{"ping": healthz.Ping}
	if gate != nil {
		live["leader-election"] = leaseCheck(mgr.Elected(), gate, clk)
	}
	ready := map[string]healthz.Checker{"informer-sync": cacheSyncCheck(mgr)}
	for name, c := range live {
		ready[name] = c
	}
	live, ready = probes.Recorded("livez", live), probes.Recorded("readyz", ready)
	for name, c := range live {
		if err := mgr.AddHealthzCheck(name, c); err != nil {
			return nil, fmt.Errorf("add health check %s: %w", name, err)
		}
	}
	for name, c := range ready {
		if err := mgr.AddReadyzCheck(name, c); err != nil {
			return nil, fmt.Errorf("add readiness check %s: %w", name, err)
		}
	}
	return &checkedManager{Manager: mgr, checks: HealthChecks{Live: live, Ready: ready}}, nil
}

// leaseCheck fails once the process has been elected and its Lease has
// lapsed for longer than LeaseLapseTolerance. A replica that waits for the
// Lease passes.
func leaseCheck(elected <-chan struct{}, gate *leadergate.Gate, clk clock.PassiveClock) healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-elected:
		default:
			return nil
		}
		if lapsed := gate.Lapsed(clk.Now()); lapsed > LeaseLapseTolerance {
			return fmt.Errorf("the leader election Lease lapsed %v ago, by this process's clock, and it still runs as leader",
				lapsed.Round(time.Second))
		}
		return nil
	}
}

// cacheSyncWait is how long the informer-sync check waits for caches that
// have not synced, well within a probe's timeout.
const cacheSyncWait = 100 * time.Millisecond

// errNotSynced is the error of the informer-sync check.
var errNotSynced = errors.New("the caches of the running controllers have not synced")

// cacheSyncCheck fails while the informers the manager's cache has started
// have not synced. A replica waiting for the Lease has started none of the
// controllers' informers, and passes.
func cacheSyncCheck(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		// A synced cache answers at once; one that is not waits out the
		// context. A context already done would not do: the cache then
		// picks at random between it and its own start.
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncWait)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errNotSynced
		}
		return nil
	}
}
