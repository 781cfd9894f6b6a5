package safety

import (
	"encoding/json"
	"fmt"

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

// DecodeFreeze reads a freeze record from the annotation's value. A value
// that does not parse is an error: the caller decides what to make of it.
func DecodeFreeze(v string) (disruption.Record, error) {
	var r disruption.Record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return r, fmt.Errorf("parse %s: %w", AnnotationFreeze, err)
	}
	if r.Since.IsZero() || r.From.IsZero() {
		return r, fmt.Errorf("parse %s: since and from must be set", AnnotationFreeze)
	}
	return r, nil
}

// AnnotationOutages records on the kube-node-lease Namespace, beside the
// freeze, the recent spans during which the leader could not reach the
// apiserver (disruption.Span, on the apiserver's clock): written once the
// apiserver answers again, and read by a new leader before it judges
// anything. No node could be marked in such a span, so a partition's
// nodes marked before it and those found unmarked after it may have gone
// silent together; a new leader that did not live through it learns of it
// here.
const AnnotationOutages = "health.nodelifecycle.io/apiserver-outages"

// EncodeOutages returns the annotation's value for a list of spans.
func EncodeOutages(spans []disruption.Span) string { return encode(spans) }

// DecodeOutages reads the spans from the annotation's value. A value that
// does not parse, or a span that ends before it begins, is an error.
func DecodeOutages(v string) ([]disruption.Span, error) {
	var spans []disruption.Span
	if err := json.Unmarshal([]byte(v), &spans); err != nil {
		return nil, fmt.Errorf("parse %s: %w", AnnotationOutages, err)
	}
	for _, s := range spans {
		if s.From.IsZero() || !s.From.Before(s.To) {
			return nil, fmt.Errorf("parse %s: a span must begin before it ends", AnnotationOutages)
		}
	}
	return spans, nil
}
