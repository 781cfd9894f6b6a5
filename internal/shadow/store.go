package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the record ConfigMap's data.
const (
	// EpisodesKey holds the episodes, as a JSON list.
	EpisodesKey = "episodes.json"
	// UpdatedKey holds when they were last written, RFC 3339.
	UpdatedKey = "updated"
)

// errUndecodable is a record whose data cannot be decoded.
var errUndecodable = errors.New("cannot decode")

// Stored is the record as a ConfigMap holds it.
type Stored struct {
	Episodes []Episode
	Updated  time.Time
}

// Load reads the record kept in the ConfigMap key; a ConfigMap not there
// yet holds no episodes.
func Load(ctx context.Context, c client.Reader, key types.NamespacedName) (Stored, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Stored{}, nil
		}
		return Stored{}, fmt.Errorf("read dry-run record %s: %w", key, err)
	}
	var s Stored
	if data := cm.Data[EpisodesKey]; data != "" {
		if err := json.Unmarshal([]byte(data), &s.Episodes); err != nil {
			return Stored{}, fmt.Errorf("read dry-run record %s: %s: %w: %w", key, EpisodesKey, errUndecodable, err)
		}
	}
	if u := cm.Data[UpdatedKey]; u != "" {
		t, err := time.Parse(time.RFC3339, u)
		if err != nil {
			return Stored{}, fmt.Errorf("read dry-run record %s: %s: %w: %w", key, UpdatedKey, errUndecodable, err)
		}
		s.Updated = t
	}
	return s, nil
}

// A dry run reads its record with get and writes it with create and
// update, nothing else. The RBAC for that is not a +kubebuilder:rbac marker,
// which would grant it to every install on every ConfigMap of kube-system:
// it is in config/dry-run, the installer of a dry run, and in the chart
// under dryRun.enable, for the record at its default --dry-run-record
// alone.

// Store keeps a dry run's Record in a ConfigMap, so that the comparison
// outlives the process that made it and can be read with the compare
// command. Make one with Shadow.Store.
type Store struct {
	// Reader reads the ConfigMap from the apiserver, Writer writes it.
	Reader client.Reader
	Writer client.Client
	Key    types.NamespacedName
	// Shadow is the dry run whose Record is kept, and which an earlier
	// run's record is restored to.
	Shadow *Shadow
	Clock  clock.WithTicker
	// Period is how often a changed record is written.
	Period time.Duration
}

// Start restores the episodes kept by an earlier run to the dry run, then
// writes its Record every Period it changed, and once more when ctx ends.
func (s *Store) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("record", s.Key)
	stored, err := s.load(ctx)
	if err != nil {
		return err
	}
	s.Shadow.Restore(stored.Episodes)
	log.Info("Dry run: keeping the comparison in a ConfigMap", "episodesKept", len(stored.Episodes))
	t := s.Clock.NewTicker(s.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The manager's context is gone: write with one of our own.
			done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err := s.save(done)
			cancel()
			return err
		case <-t.C():
			if err := s.save(ctx); err != nil {
				log.Error(err, "Dry run: could not write the comparison; will try again")
			}
		}
	}
}

// load reads the record an earlier run kept, trying again every Period
// while the apiserver fails to answer. A record that cannot be decoded is an
// error: it is the operator's to look at, not this run's to overwrite.
func (s *Store) load(ctx context.Context) (Stored, error) {
	for {
		stored, err := Load(ctx, s.Reader, s.Key)
		if err == nil || errors.Is(err, errUndecodable) {
			return stored, err
		}
		ctrl.LoggerFrom(ctx).Error(err, "Dry run: could not read the comparison kept by an earlier run; will try again", "record", s.Key)
		select {
		case <-ctx.Done():
			return Stored{}, fmt.Errorf("read dry-run record %s: %w", s.Key, ctx.Err())
		case <-s.Clock.After(s.Period):
		}
	}
}

// save writes the record if it changed since the last write.
func (s *Store) save(ctx context.Context) error {
	episodes, changed := s.Shadow.Record.Episodes(true)
	if !changed {
		return nil
	}
	data, err := json.Marshal(episodes)
	if err != nil {
		return fmt.Errorf("encode dry-run record: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Key.Namespace, Name: s.Key.Name}}
	err = s.Reader.Get(ctx, s.Key, cm)
	cm.Data = map[string]string{EpisodesKey: string(data), UpdatedKey: s.Clock.Now().UTC().Format(time.RFC3339)}
	switch {
	case apierrors.IsNotFound(err):
		cm.Labels = map[string]string{"app.kubernetes.io/name": "node-lifecycle-controller",
			"app.kubernetes.io/component": "dry-run-record"}
		err = s.Writer.Create(ctx, cm)
	case err == nil:
		err = s.Writer.Update(ctx, cm)
	}
	if err != nil {
		s.Shadow.Record.touch()
		return fmt.Errorf("write dry-run record %s: %w", s.Key, err)
	}
	return nil
}

// NeedLeaderElection is true: only the dry run that leads keeps the record.
func (*Store) NeedLeaderElection() bool { return true }
