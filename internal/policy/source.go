package policy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Source is the controllers' view of the policies in force.
type Source interface {
	// For returns the settings the node follows.
	For(ctx context.Context, node *corev1.Node) Settings
	// Refresh reads the policies again, so that what For returns next
	// reflects every policy change the cache has seen.
	Refresh(ctx context.Context) error
}
