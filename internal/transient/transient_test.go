package transient

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWhatARetryMayChange(t *testing.T) {
	nodes := schema.GroupResource{Resource: "nodes"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&url.Error{Op: "Get", URL: "https://apiserver/api/v1/nodes/n", Err: context.DeadlineExceeded}, true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewServiceUnavailable("starting"), true},
		{apierrors.NewTimeoutError("timeout", 1), true},
		{fmt.Errorf("get node: %w", apierrors.NewInternalError(errors.New("etcd"))), true},
		{apierrors.NewForbidden(nodes, "n", errors.New("no")), false},
		{apierrors.NewUnauthorized("who"), false},
		{apierrors.NewBadRequest("bad"), false},
	} {
		if got := Is(tc.err); got != tc.want {
			t.Errorf("Is(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
