package safety

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
)

// AnnotationFreeze records on the kube-node-lease Namespace the partition
// freeze the leader holds (disruption.Record, on the apiserver's clock):
// written when the freeze starts, when its cooldown starts or is called off,
// and removed when it ends. A new leader reads it before it judges
// anything, and carries on with that freeze.
const AnnotationFreeze = "health.nodelifecycle.io/partition-freeze"

// EncodeFreeze returns the annotation's value for a freeze record.
func EncodeFreeze(r disruption.Record) string { return encode(r) }

// decodeFreeze reads a freeze record from the annotation's value. A value
// that does not parse is an error: the caller decides what to make of it.
func decodeFreeze(v string) (disruption.Record, error) {
	var r disruption.Record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return r, fmt.Errorf("parse %s: %w", AnnotationFreeze, err)
	}
	if r.Since.IsZero() || r.From.IsZero() {
		return r, fmt.Errorf("parse %s: since and from must be set", AnnotationFreeze)
	}
	return r, nil
}

// AnnotationUnwatched records on the kube-node-lease Namespace, beside the
// freeze, the recent spans in which no leader could mark a node
// (disruption.Span, on the apiserver's clock): the apiserver outages the
// leader lived through, written once the apiserver answers again, and the
// time between the last renewal of the leader before it and its taking
// over, written at its first look. A new leader reads them before it judges
// anything: a partition's nodes marked before such a span and those found
// unmarked after it may have gone silent together, and its window reaches
// over them.
const AnnotationUnwatched = "health.nodelifecycle.io/unwatched-spans"

// EncodeUnwatched returns AnnotationUnwatched's value for a list of spans.
func EncodeUnwatched(spans []disruption.Span) string { return encode(spans) }

// DecodeUnwatched reads the spans from AnnotationUnwatched's value. A value that
// does not parse, or a span that ends before it begins, is an error.
func DecodeUnwatched(v string) ([]disruption.Span, error) {
	var spans []disruption.Span
	if err := json.Unmarshal([]byte(v), &spans); err != nil {
		return nil, fmt.Errorf("parse %s: %w", AnnotationUnwatched, err)
	}
	for _, s := range spans {
		if s.From.IsZero() || !s.From.Before(s.To) {
			return nil, fmt.Errorf("parse %s: a span must begin before it ends", AnnotationUnwatched)
		}
	}
	return spans, nil
}

// KeptOn reads what the kube-node-lease Namespace keeps for a new leader:
// the partition freeze and the unwatched spans. An annotation that does not
// parse is left out, and said so in the error; the other is read all the
// same.
func KeptOn(ns *corev1.Namespace) (Kept, error) {
	var kept Kept
	var errs []error
	if v, ok := ns.Annotations[AnnotationFreeze]; ok {
		rec, err := decodeFreeze(v)
		if err == nil {
			kept.Freeze = &rec
		}
		errs = append(errs, err)
	}
	if v, ok := ns.Annotations[AnnotationUnwatched]; ok {
		var err error
		kept.Unwatched, err = DecodeUnwatched(v)
		errs = append(errs, err)
	}
	return kept, errors.Join(errs...)
}
