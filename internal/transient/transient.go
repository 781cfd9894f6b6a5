// Package transient tells the failed requests to an apiserver that may
// succeed if sent again from those no retry changes.
package transient

import (
	"errors"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Is reports whether a failed request may succeed if sent again: one the
// apiserver asked to be sent later, one it answered with a server error, a
// 429 or a timeout, and one that did not reach it or whose answer was cut.
func Is(err error) bool {
	if _, retryAfter := apierrors.SuggestsClientDelay(err); retryAfter {
		return true
	}
	if apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
		return true
	}
	var urlErr *url.Error
	return errors.As(err, &urlErr) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err)
}
