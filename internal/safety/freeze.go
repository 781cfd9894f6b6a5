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
