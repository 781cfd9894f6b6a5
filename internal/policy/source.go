package policy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source is the controllers' view of the policies in force.
type Source interface {
	// For returns the settings the node follows.
	For(ctx context.Context, node *corev1.Node) Settings
	// Nodes subscribes a controller to policy changes: after each, the
	// returned source queues the nodes keep accepts (every node when keep
	// is nil), once For answers with the new policies.
	Nodes(keep func(*corev1.Node) bool) source.TypedSource[reconcile.Request]
}
