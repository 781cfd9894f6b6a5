package controllers

import (
	"context"
	"errors"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestEnsureLeaseNamespaceCreatesItOnce(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	for range 2 {
		if err := ensureLeaseNamespace(ctx, c, c); err != nil {
			t.Fatal(err)
		}
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns); err != nil {
		t.Fatalf("namespace not created: %v", err)
	}
}

// failingNamespaceGets returns a client whose first n reads of a namespace
// fail with err, and a count of those reads.
func failingNamespaceGets(n int32, err error) (client.Client, *atomic.Int32) {
	var gets atomic.Int32
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Namespace); ok && gets.Add(1) <= n {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	return c, &gets
}

var namespaces = schema.GroupResource{Resource: "namespaces"}

// TestEnsureLeaseNamespaceRetries: an apiserver that fails for a while at
// start, or forbids the read until RBAC is fixed, stops nothing: the
// namespace is ensured once it answers.
func TestEnsureLeaseNamespaceRetries(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"internal error", apierrors.NewInternalError(errors.New("etcd leader changed"))},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1)},
		{"service unavailable", apierrors.NewServiceUnavailable("starting")},
		{"server timeout", apierrors.NewServerTimeout(namespaces, "get", 1)},
		{"timeout", apierrors.NewTimeoutError("request timed out", 1)},
		{"bad gateway", apierrors.NewGenericServerResponse(502, "get", namespaces, corev1.NamespaceNodeLease, "", 0, true)},
		{"connection refused", &url.Error{Op: "Get", URL: "https://apiserver", Err: syscall.ECONNREFUSED}},
		{"forbidden", apierrors.NewForbidden(namespaces, corev1.NamespaceNodeLease, errors.New("RBAC: not allowed"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl, gets := failingNamespaceGets(2, c.err)
			if err := ensureLeaseNamespace(ctx, cl, cl); err != nil {
				t.Fatalf("ensureLeaseNamespace: %v", err)
			}
			if got := gets.Load(); got != 3 {
				t.Errorf("namespace read %d times, want 3 (two failures, then success)", got)
			}
			ns := &corev1.Namespace{}
			if err := cl.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns); err != nil {
				t.Fatalf("namespace not created: %v", err)
			}
		})
	}
}

// TestEnsureLeaseNamespaceFailsOnAPermanentError: a request the apiserver
// rejects as wrong will not pass by being sent again.
func TestEnsureLeaseNamespaceFailsOnAPermanentError(t *testing.T) {
	bad := apierrors.NewBadRequest("no")
	cl, gets := failingNamespaceGets(1000, bad)
	err := ensureLeaseNamespace(context.Background(), cl, cl)
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v, want %v", err, bad)
	}
	if got := gets.Load(); got != 1 {
		t.Errorf("namespace read %d times, want 1", got)
	}
}

// TestEnsureLeaseNamespaceStopsWithItsContext: the retries end with the
// manager, and the error says what kept failing.
func TestEnsureLeaseNamespaceStopsWithItsContext(t *testing.T) {
	down := apierrors.NewServiceUnavailable("down")
	cl, _ := failingNamespaceGets(1000, down)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := ensureLeaseNamespace(ctx, cl, cl)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, down) {
		t.Fatalf("err = %v, want the context's end and the last failure", err)
	}
}
