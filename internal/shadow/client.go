package shadow

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Client returns a client that reads through c and the View, and writes
// nothing: a write to a Node or a Pod goes to the View and the Record, any
// other write is dropped. Every method of client.Client is its own, so no
// write can reach the apiserver through one it forgot.
func (s *Shadow) Client(c client.Client) client.Client { return &dryClient{reader: reader{c, s}, c: c} }

// Reader returns a reader that reads through r and the View.
func (s *Shadow) Reader(r client.Reader) client.Reader { return reader{r, s} }

type reader struct {
	r client.Reader
	s *Shadow
}

// Get reads the object and shows a Node or a Pod as the dry run would have
// left it.
func (r reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.await(ctx, obj); err != nil {
		return err
	}
	if err := r.r.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	r.s.show(obj)
	return nil
}

// List lists the objects and shows Nodes and Pods as the dry run would have
// left them.
func (r reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.await(ctx, list); err != nil {
		return err
	}
	if err := r.r.List(ctx, list, opts...); err != nil {
		return err
	}
	switch l := list.(type) {
	case *corev1.NodeList:
		for i := range l.Items {
			r.s.View.ShowNode(&l.Items[i])
		}
	case *corev1.PodList:
		for i := range l.Items {
			r.s.View.ShowPod(&l.Items[i])
		}
	}
	return nil
}

// await waits, before a read of Nodes or Pods, until the record kept by an
// earlier run is restored.
func (r reader) await(ctx context.Context, obj runtime.Object) error {
	switch obj.(type) {
	case *corev1.Node, *corev1.Pod, *corev1.NodeList, *corev1.PodList:
		return r.s.awaitRestore(ctx)
	}
	return nil
}

// show shows a Node or a Pod as the dry run would have left it.
func (s *Shadow) show(obj client.Object) {
	switch o := obj.(type) {
	case *corev1.Node:
		s.View.ShowNode(o)
	case *corev1.Pod:
		s.View.ShowPod(o)
	}
}

type dryClient struct {
	reader
	c client.Client
}

// written keeps what a write would have done; subresource is "" for the
// object itself.
func (s *Shadow) written(ctx context.Context, verb string, obj client.Object, subresource string) {
	switch o := obj.(type) {
	case *corev1.Node:
		if verb == "patch" || verb == "update" {
			s.nodeWritten(ctx, o, subresource == "status")
			return
		}
	case *corev1.Pod:
		switch {
		case verb == "delete" && subresource == "", verb == "create" && subresource == "eviction":
			s.podDeleted(ctx, o)
			return
		case subresource == "status" && (verb == "patch" || verb == "update"):
			if podNotReady(o) {
				s.podMarked(ctx, o)
			}
			return
		}
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Dry run: not writing", "verb", verb, "subresource", subresource,
		"kind", kindOf(obj), "name", obj.GetName(), "namespace", obj.GetNamespace())
}

// podNotReady reports whether the pod's Ready condition is False.
func podNotReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if _, err := meta.Accessor(obj); err == nil {
		return describe(obj)
	}
	return "unknown"
}

// Create writes nothing.
func (d *dryClient) Create(ctx context.Context, obj client.Object, _ ...client.CreateOption) error {
	d.s.written(ctx, "create", obj, "")
	return nil
}

// Delete writes nothing.
func (d *dryClient) Delete(ctx context.Context, obj client.Object, _ ...client.DeleteOption) error {
	d.s.written(ctx, "delete", obj, "")
	return nil
}

// Update writes nothing.
func (d *dryClient) Update(ctx context.Context, obj client.Object, _ ...client.UpdateOption) error {
	d.s.written(ctx, "update", obj, "")
	return nil
}

// Patch writes nothing; obj is taken as the caller made it.
func (d *dryClient) Patch(ctx context.Context, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
	d.s.written(ctx, "patch", obj, "")
	return nil
}

// Apply writes nothing.
func (d *dryClient) Apply(ctx context.Context, _ runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	ctrl.LoggerFrom(ctx).V(1).Info("Dry run: not applying")
	return nil
}

// DeleteAllOf writes nothing.
func (d *dryClient) DeleteAllOf(ctx context.Context, obj client.Object, _ ...client.DeleteAllOfOption) error {
	d.s.written(ctx, "deletecollection", obj, "")
	return nil
}

// Status returns a status writer that writes nothing.
func (d *dryClient) Status() client.SubResourceWriter { return d.SubResource("status") }

// SubResource returns a subresource client that reads through c and
// writes nothing.
func (d *dryClient) SubResource(name string) client.SubResourceClient {
	return drySub{s: d.s, name: name, r: d.c.SubResource(name)}
}

// Scheme returns the scheme of the client it reads through.
func (d *dryClient) Scheme() *runtime.Scheme { return d.c.Scheme() }

// RESTMapper returns the REST mapper of the client it reads through.
func (d *dryClient) RESTMapper() meta.RESTMapper { return d.c.RESTMapper() }

// GroupVersionKindFor returns the object's kind.
func (d *dryClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return d.c.GroupVersionKindFor(obj)
}

// IsObjectNamespaced reports whether the object's kind is namespaced.
func (d *dryClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	return d.c.IsObjectNamespaced(obj)
}

type drySub struct {
	s    *Shadow
	name string
	r    client.SubResourceReader
}

// Get reads the subresource.
func (d drySub) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	return d.r.Get(ctx, obj, sub, opts...)
}

// Create writes nothing.
func (d drySub) Create(ctx context.Context, obj, _ client.Object, _ ...client.SubResourceCreateOption) error {
	d.s.written(ctx, "create", obj, d.name)
	return nil
}

// Update writes nothing.
func (d drySub) Update(ctx context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	d.s.written(ctx, "update", obj, d.name)
	return nil
}

// Patch writes nothing; obj is taken as the caller made it.
func (d drySub) Patch(ctx context.Context, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
	d.s.written(ctx, "patch", obj, d.name)
	return nil
}

// Apply writes nothing.
func (d drySub) Apply(ctx context.Context, _ runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	ctrl.LoggerFrom(ctx).V(1).Info("Dry run: not applying", "subresource", d.name)
	return nil
}
