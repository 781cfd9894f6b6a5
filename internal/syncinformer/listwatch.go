package syncinformer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// ListThenWatch returns lw for a reflector that lists, then watches from
// the list's revision, rather than streaming its list in the watch
// (client-go's WatchListClient). A streamed list waits for the apiserver's
// watch cache to reach etcd's latest revision, and ends in an error after
// three seconds when it does not: in a storm of writes, as when a zone
// dies, the reflector begins it again and again, and its informer does not
// sync. A list at resourceVersion 0 is served from the watch cache as it
// stands, at once and whole, and the watch brings the rest. The cache may
// then start behind the cluster, as a lagging watch leaves it: the
// controllers read a node live before they mark its pods NotReady or evict
// them for its failure, and name a pod's UID in each write to it.
func ListThenWatch(lw *cache.ListWatch) cache.ListerWatcher { return listThenWatch{ListWatch: lw} }

// ListInPages returns lw for a reflector that lists, then watches, as
// ListThenWatch does, but whose first list is consistent and comes in
// pages, each passed through transform (if not nil) as it arrives. A
// consistent list is as fresh as etcd: the apiserver serves it from its
// watch cache once that has caught up, and from etcd when it has not
// within three seconds, so a storm of writes delays it by that much at
// most. A list at resourceVersion 0 comes whole, and the reflector holds
// every object as decoded (a Node's image list and all) until the last is
// stored: the peak of a process's memory, well above what it keeps. In
// pages, what transform drops from one goes before the next is read. The
// informer transforms each object again as it stores it, so transform must
// be idempotent, as client-go recommends of every transform.
func ListInPages(lw *cache.ListWatch, transform cache.TransformFunc) cache.ListerWatcher {
	return listThenWatch{ListWatch: lw, paged: true, transform: transform}
}

type listThenWatch struct {
	*cache.ListWatch
	// paged asks for the first list at the latest revision, in pages.
	paged     bool
	transform cache.TransformFunc
}

// IsWatchListSemanticsUnSupported tells client-go's reflector not to
// stream the list.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// List lists one page.
func (l listThenWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// ListWithContext lists one page. The reflector asks at resourceVersion 0
// first, with a page size that the watch cache ignores at that revision;
// paged, the page is asked for at the latest revision instead, which it
// honors. A relist at the revision last seen is left as asked.
func (l listThenWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if l.paged && opts.ResourceVersion == "0" && opts.ResourceVersionMatch == "" {
		opts.ResourceVersion = ""
	}
	list, err := l.ListWatch.ListWithContext(ctx, opts)
	if err != nil || l.transform == nil {
		return list, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("read a listed page: %w", err)
	}
	replaced := false
	for i, item := range items {
		out, err := l.transform(item)
		if err != nil {
			return nil, fmt.Errorf("transform a listed %T: %w", item, err)
		}
		o, ok := out.(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("transform turned a listed %T into %T", item, out)
		}
		if o != item {
			items[i], replaced = o, true
		}
	}
	if replaced {
		if err := meta.SetList(list, items); err != nil {
			return nil, fmt.Errorf("store a transformed page: %w", err)
		}
	}
	return list, nil
}
