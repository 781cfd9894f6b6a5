// Package readback lets a controller read its own writes before its cache
// has them.
//
// A controller-runtime client reads from the informers' cache and writes to
// the apiserver. The look that follows a write, often queued by the write
// itself, reads the cache before the watch has brought the write back, and
// works from the object the write replaced: it sends again what it has just
// sent, and a write locked to the resourceVersion it read is refused with a
// conflict, then retried, until the watch catches up. Under load that is
// several wasted requests for each one that lands.
//
// Client keeps the object each of its writes returned and serves it to a
// read while the cache still holds an older version of the same object.
// What it serves is never older than what the cache holds: an object the
// cache shows at the written version or later, or another object of the
// same name, drops the kept one. controller-runtime has no such client yet
// (kubernetes-sigs/controller-runtime#3320); this one is small because it
// serves one kind and only Get.
package readback

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Client is a client.Client that serves the objects of kind T its own
// Patch and Update calls wrote to its Get calls until the cache has them.
// Lists are read from the cache as they are.
type Client[T any, PT interface {
	*T
	client.Object
}] struct {
	client.Client

	mu sync.Mutex
	// written holds, by name, the object the last write returned, for as
	// long as the cache has shown only older versions of it.
	written map[client.ObjectKey]PT
}

// New wraps c so that it reads its own writes of objects of kind T.
func New[T any, PT interface {
	*T
	client.Object
}](c client.Client) *Client[T, PT] {
	return &Client[T, PT]{Client: c, written: map[client.ObjectKey]PT{}}
}

// Get reads the object from c, and, for an object of kind T that this
// client wrote since the version c holds, returns the written one instead.
func (c *Client[T, PT]) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	o, ok := obj.(PT)
	if !ok || (err != nil && !apierrors.IsNotFound(err)) {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, kept := c.written[key]
	if !kept {
		return err
	}
	if err != nil || !olderThan(o, w) {
		// Gone, replaced, or caught up: the cache knows as much.
		delete(c.written, key)
		return err
	}
	*o = *(w.DeepCopyObject().(PT))
	return nil
}

// olderThan reports whether cached is an earlier version of the object
// written is. resourceVersions of one resource are comparable integers;
// one that is not counts as caught up, and the cache is read as it is.
func olderThan(cached, written client.Object) bool {
	if cached.GetUID() != written.GetUID() {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), written.GetResourceVersion())
	return err == nil && cmp < 0
}

// Patch patches the object and keeps what the apiserver returned.
func (c *Client[T, PT]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	before := obj.GetResourceVersion()
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	c.wrote(obj, before, (&client.PatchOptions{}).ApplyOptions(opts).DryRun)
	return nil
}

// Update updates the object and keeps what the apiserver returned.
func (c *Client[T, PT]) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	before := obj.GetResourceVersion()
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	c.wrote(obj, before, (&client.UpdateOptions{}).ApplyOptions(opts).DryRun)
	return nil
}

// Delete deletes the object and forgets what was written to it.
func (c *Client[T, PT]) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(PT); ok {
		c.mu.Lock()
		delete(c.written, client.ObjectKeyFromObject(obj))
		c.mu.Unlock()
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// Status returns a writer of the status subresource that keeps what it
// wrote, as Patch and Update do.
func (c *Client[T, PT]) Status() client.SubResourceWriter {
	return c.SubResource("status")
}

// SubResource returns a client of the subresource whose writes of the
// object are kept, as Patch and Update do. Only a subresource that returns
// the object itself, as status does, gives anything to keep.
func (c *Client[T, PT]) SubResource(name string) client.SubResourceClient {
	return subResource[T, PT]{SubResourceClient: c.Client.SubResource(name), c: c}
}

type subResource[T any, PT interface {
	*T
	client.Object
}] struct {
	client.SubResourceClient
	c *Client[T, PT]
}

// Patch patches the subresource and keeps the object the apiserver
// returned.
func (s subResource[T, PT]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	before := obj.GetResourceVersion()
	if err := s.SubResourceClient.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	s.c.wrote(obj, before, (&client.SubResourcePatchOptions{}).ApplyOptions(opts).DryRun)
	return nil
}

// Update updates the subresource and keeps the object the apiserver
// returned.
func (s subResource[T, PT]) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	before := obj.GetResourceVersion()
	if err := s.SubResourceClient.Update(ctx, obj, opts...); err != nil {
		return err
	}
	s.c.wrote(obj, before, (&client.SubResourceUpdateOptions{}).ApplyOptions(opts).DryRun)
	return nil
}

// wrote keeps obj, as a write that replaced version before returned it. A
// write that returned the version it was given stored nothing new (a dry
// run, or a client that writes nothing): there is nothing the cache lacks.
func (c *Client[T, PT]) wrote(obj client.Object, before string, dryRun []string) {
	o, ok := obj.(PT)
	if !ok || len(dryRun) > 0 || o.GetResourceVersion() == before {
		return
	}
	key := client.ObjectKeyFromObject(o)
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.written[key]; ok && olderThan(o, kept) {
		// Another write of the same object returned after it.
		return
	}
	c.written[key] = o.DeepCopyObject().(PT)
}
