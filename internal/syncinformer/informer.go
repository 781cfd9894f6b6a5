// Package syncinformer provides an informer that calls its event handlers in
// the goroutine that applies each change to its store.
//
// client-go's shared informer hands every event to each handler through a
// listener of two goroutines, so that a slow handler cannot hold the others
// back: two goroutine wake-ups an event per handler. At the rate node Leases
// are renewed, 500 a second at 5,000 nodes, those wake-ups cost a node
// lifecycle controller more than everything its handlers do. The handlers
// this informer serves only record a heartbeat and queue a request, which
// never block, so it calls them in line, as client-go's plain informer
// (cache.NewInformerWithOptions) calls its one handler, and lets more than
// one handler register, before it starts or after, as a shared informer
// does.
package syncinformer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Informer is a cache.SharedIndexInformer whose handlers are called in the
// goroutine that applies each change to its store. A handler must not
// block.
type Informer struct {
	indexer    cache.Indexer
	controller cache.Controller

	// mu orders the calls of handlers against a registration: a handler
	// added to a running informer is told of every stored object before
	// any change after them.
	mu       sync.RWMutex
	handlers []*registration

	// transform, set before the informer runs, is applied to each object
	// before it is stored.
	transform atomic.Pointer[cache.TransformFunc]
	started   atomic.Bool
	stopped   atomic.Bool
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// New returns an informer of the objects lw lists and watches, of
// objType's kind, with the given indexes. A resync period of 0 means none.
// It is cache.NewSharedIndexInformer's signature, so that it can stand in
// for it (controller-runtime's cache.Options.NewInformer).
func New(lw cache.ListerWatcher, objType runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	i := &Informer{}
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    objType,
		Handler:       dispatch{i},
		ResyncPeriod:  resync,
		Indexers:      indexers,
		Transform:     i.applyTransform,
	})
	i.indexer, i.controller = store.(cache.Indexer), controller
	return i
}

// applyTransform applies the transform set by SetTransform, if any.
func (i *Informer) applyTransform(obj any) (any, error) {
	if t := i.transform.Load(); t != nil && *t != nil {
		return (*t)(obj)
	}
	return obj, nil
}

// dispatch is the one handler of the underlying informer: it calls every
// registered handler.
type dispatch struct{ i *Informer }

// OnAdd tells every handler of an object added.
func (d dispatch) OnAdd(obj any, isInInitialList bool) {
	d.i.mu.RLock()
	defer d.i.mu.RUnlock()
	for _, r := range d.i.handlers {
		r.handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate tells every handler of an object updated.
func (d dispatch) OnUpdate(oldObj, newObj any) {
	d.i.mu.RLock()
	defer d.i.mu.RUnlock()
	for _, r := range d.i.handlers {
		r.handler.OnUpdate(oldObj, newObj)
	}
}

// OnDelete tells every handler of an object deleted.
func (d dispatch) OnDelete(obj any) {
	d.i.mu.RLock()
	defer d.i.mu.RUnlock()
	for _, r := range d.i.handlers {
		r.handler.OnDelete(obj)
	}
}

// registration is one handler's place in the informer.
type registration struct {
	i       *Informer
	handler cache.ResourceEventHandler
}

// HasSynced reports whether the handler has been told of everything the
// informer's first list held.
func (r *registration) HasSynced() bool { return r.i.controller.HasSynced() }

// HasSyncedChecker returns a checker of HasSynced.
func (r *registration) HasSyncedChecker() cache.DoneChecker { return r.i.controller.HasSyncedChecker() }

// AddEventHandler registers handler. Added to a running informer, it is
// told of every stored object, as in the first list, before it returns.
func (i *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod registers handler; the informer resyncs
// at the period it was made with, whatever a handler asks for.
func (i *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithOptions registers handler, as AddEventHandler does;
// the options' resync period and logger are not used.
func (i *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if i.stopped.Load() {
		return nil, fmt.Errorf("handler %v was not added to the informer because it has stopped already", handler)
	}
	r := &registration{i: i, handler: handler}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started.Load() {
		for _, obj := range i.indexer.List() {
			handler.OnAdd(obj, true)
		}
	}
	i.handlers = append(i.handlers, r)
	return r, nil
}

// RemoveEventHandler stops calling a registered handler.
func (i *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok || r.i != i {
		return errors.New("syncinformer: not a registration of this informer")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = slices.DeleteFunc(i.handlers, func(h *registration) bool { return h == r })
	return nil
}

// GetStore returns the informer's store.
func (i *Informer) GetStore() cache.Store { return i.indexer }

// GetIndexer returns the informer's store, indexed.
func (i *Informer) GetIndexer() cache.Indexer { return i.indexer }

// AddIndexers adds indexes to the store.
func (i *Informer) AddIndexers(indexers cache.Indexers) error {
	return i.indexer.AddIndexers(indexers)
}

// GetController returns the underlying informer's controller.
func (i *Informer) GetController() cache.Controller { return i.controller }

// Run runs the informer until stopCh is closed.
func (i *Informer) Run(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		<-stopCh
	}()
	i.RunWithContext(ctx)
}

// RunWithContext runs the informer until ctx is done.
func (i *Informer) RunWithContext(ctx context.Context) {
	if i.started.Swap(true) {
		return
	}
	defer i.stopped.Store(true)
	i.controller.RunWithContext(ctx)
}

// HasSynced reports whether the store holds the informer's first list.
func (i *Informer) HasSynced() bool { return i.controller.HasSynced() }

// HasSyncedChecker returns a checker of HasSynced.
func (i *Informer) HasSyncedChecker() cache.DoneChecker { return i.controller.HasSyncedChecker() }

// LastSyncResourceVersion returns the resourceVersion the store was last
// synced to.
func (i *Informer) LastSyncResourceVersion() string { return i.controller.LastSyncResourceVersion() }

// SetWatchErrorHandler is refused: this informer logs watch errors as
// client-go's default handler does.
func (i *Informer) SetWatchErrorHandler(cache.WatchErrorHandler) error {
	return errors.New("syncinformer: a watch error handler cannot be set")
}

// SetWatchErrorHandlerWithContext is refused, as SetWatchErrorHandler is.
func (i *Informer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return errors.New("syncinformer: a watch error handler cannot be set")
}

// SetTransform sets the function applied to each object before it is
// stored. It must be called before the informer runs.
func (i *Informer) SetTransform(t cache.TransformFunc) error {
	if i.started.Load() {
		return errors.New("syncinformer: the transform cannot change once the informer has started")
	}
	i.transform.Store(&t)
	return nil
}

// IsStopped reports whether the informer has stopped.
func (i *Informer) IsStopped() bool { return i.stopped.Load() }
