package controllers

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/leadergate"
)

// defaultRenewDeadline is controller-runtime's renew deadline, for a
// manager whose options leave it unset.
const defaultRenewDeadline = 10 * time.Second

// gateWrites has every request sent with cfg that may change something
// wait for the leader election Lease to be this process's by its own clock
// (package leadergate), and sets the lock in mgrOpts that tells it so. The
// lock reaches the apiserver as the manager would have it (with
// mgrOpts.LeaderElectionConfig, else with cfg as it is before this call),
// never through the gate: it must go on renewing the Lease, or find out
// that it cannot. A lock the caller set in mgrOpts is wrapped instead, and
// keeps its own client. The returned events must be given the manager once
// it is made: the lock sends its events with the manager's recorder. The
// returned gate tells whether the Lease is this process's.
func gateWrites(cfg *rest.Config, mgrOpts *ctrl.Options, clk clock.PassiveClock) (*electionEvents, *leadergate.Gate, error) {
	if mgrOpts.RenewDeadline == nil {
		mgrOpts.RenewDeadline = ptr.To(defaultRenewDeadline)
	}
	events := &electionEvents{}
	lock := mgrOpts.LeaderElectionResourceLockInterface
	if lock == nil {
		lockCfg := cfg
		if mgrOpts.LeaderElectionConfig != nil {
			lockCfg = mgrOpts.LeaderElectionConfig
		}
		var err error
		lock, err = leaderelection.NewResourceLock(rest.CopyConfig(lockCfg), events, leaderelection.Options{
			LeaderElection:             true,
			LeaderElectionResourceLock: mgrOpts.LeaderElectionResourceLock,
			LeaderElectionID:           mgrOpts.LeaderElectionID,
			LeaderElectionNamespace:    mgrOpts.LeaderElectionNamespace,
			RenewDeadline:              *mgrOpts.RenewDeadline,
			LeaderLabels:               mgrOpts.LeaderElectionLabels,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("leader election lock: %w", err)
		}
	}
	// The renew deadline is what client-go's elector allows itself
	// without a renewal, and it is shorter than the lease duration, as
	// the elector requires.
	gate := leadergate.New(clk, *mgrOpts.RenewDeadline)
	mgrOpts.LeaderElectionResourceLockInterface = gate.Lock(lock)
	cfg.Wrap(gate.Wrap)
	return events, gate, nil
}

// electionEvents is the event recorder provider of the leader election's
// lock. The lock takes its recorder when it is made, before the manager
// whose recorders it should use; the recorders given here pass each event
// on to the manager's, which are set (setManager) before the manager
// starts, and so before the lock records anything.
type electionEvents struct {
	mu  sync.Mutex
	mgr recorder.Provider
}

// setManager has the recorders pass their events on to mgr's.
func (e *electionEvents) setManager(mgr recorder.Provider) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mgr = mgr
}

func (e *electionEvents) provider() recorder.Provider {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mgr
}

// GetEventRecorderFor implements recorder.Provider.
func (e *electionEvents) GetEventRecorderFor(name string) record.EventRecorder {
	return &legacyElectionRecorder{events: e, name: name}
}

// GetEventRecorder implements recorder.Provider.
func (e *electionEvents) GetEventRecorder(name string) recorder.EventRecorder {
	return &electionRecorder{events: e, name: name}
}

// legacyElectionRecorder is the record.EventRecorder electionEvents gives;
// the lock records with it. An event recorded before the manager is set
// is dropped.
type legacyElectionRecorder struct {
	events *electionEvents
	name   string
}

func (r *legacyElectionRecorder) to() record.EventRecorder {
	p := r.events.provider()
	if p == nil {
		return nil
	}
	return p.GetEventRecorderFor(r.name) //nolint:staticcheck // client-go's lock records with the old events API
}

// Event implements record.EventRecorder.
func (r *legacyElectionRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if to := r.to(); to != nil {
		to.Event(object, eventtype, reason, message)
	}
}

// Eventf implements record.EventRecorder.
func (r *legacyElectionRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if to := r.to(); to != nil {
		to.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

// AnnotatedEventf implements record.EventRecorder.
func (r *legacyElectionRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if to := r.to(); to != nil {
		to.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}

// electionRecorder is the recorder.EventRecorder electionEvents gives. An
// event recorded before the manager is set is dropped.
type electionRecorder struct {
	events *electionEvents
	name   string
}

func (r *electionRecorder) to() recorder.EventRecorder {
	p := r.events.provider()
	if p == nil {
		return nil
	}
	return p.GetEventRecorder(r.name)
}

// Eventf implements recorder.EventRecorder.
func (r *electionRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if to := r.to(); to != nil {
		to.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
}

// AnnotatedEventf implements recorder.EventRecorder.
func (r *electionRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	if to := r.to(); to != nil {
		to.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
	}
}
