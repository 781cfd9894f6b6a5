package podscope

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Scoped watches the pods of the nodes the controllers act on, one watch
// per node, and every pod in one watch while more nodes than its limit
// need theirs. It is a manager.Runnable that runs on every replica, leader
// or not, so that a replica taking over finds the pods of the nodes in
// trouble already listed. Only the leader switches to the watch of every
// pod (Leading): a standby keeps the watches of at most its limit of nodes,
// so that the failure the wide watch is for does not take every replica's
// memory up at once.
type Scoped struct {
	// Log, when set, is what Start logs to; otherwise its context's.
	Log logr.Logger

	nodes   cache.Informers
	listers func(fieldSelector string) *toolscache.ListWatch
	limit   int
	clock   clock.WithTicker
	// linger is how long a node expected, or whose pods were asked for,
	// keeps its watch while nothing about the node needs it: time for the
	// mark it was expected for to be written and seen.
	linger time.Duration

	mu sync.Mutex
	// ctx is Start's; no watch runs before it is set.
	ctx context.Context
	// elected is closed once this replica leads; nil means it always
	// does.
	elected <-chan struct{}
	wanted  map[string]*wanted
	// wide is the watch of every pod, while it runs; wideMode says whether
	// it is wanted.
	wide     *watch
	wideMode bool
	subs     map[*subscriber]struct{}
}

// wanted is a node whose pods are watched.
type wanted struct {
	// watch is the node's own watch; nil while the wide watch serves it.
	watch *watch
	// needed: the node, as last seen, needs its pods watched (Needs).
	needed bool
	// expected is when the node was last expected, or its pods asked for.
	expected time.Time
}

var _ Pods = (*Scoped)(nil)

// NewScoped returns a Scoped that hears of nodes from the Node informer of
// nodes and watches pods with cfg, on a client of its own (protobuf, its
// own rate limit at cfg's QPS and burst). While more than limit (at least
// 1) nodes need their pods, it watches every pod in one watch, until the
// count falls to half of limit. A node expected, or whose pods were asked
// for, keeps its watch for linger, and clk times it.
func NewScoped(cfg *rest.Config, nodes cache.Informers, limit int, linger time.Duration, clk clock.WithTicker) (*Scoped, error) {
	if limit < 1 || linger <= 0 {
		return nil, fmt.Errorf("pod watches: limit %d and linger %v must be positive", limit, linger)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = k8sruntime.ContentTypeProtobuf
	cfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod watch client: %w", err)
	}
	listers := func(sel string) *toolscache.ListWatch {
		return toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", corev1.NamespaceAll,
			func(o *metav1.ListOptions) { o.FieldSelector = sel })
	}
	return &Scoped{nodes: nodes, listers: listers, limit: limit, linger: linger, clock: clk,
		wanted: map[string]*wanted{}, subs: map[*subscriber]struct{}{}}, nil
}

// NeedLeaderElection is false: standby replicas keep the watches of the
// nodes in trouble too, up to the limit.
func (s *Scoped) NeedLeaderElection() bool { return false }

// Leading tells s that this replica leads once elected is closed (a
// manager's Elected): until then it never watches every pod, and watches
// the pods of at most its limit of nodes. Call it before Start.
func (s *Scoped) Leading(elected <-chan struct{}) { s.elected = elected }

// leads reports whether this replica leads. Called with mu held.
func (s *Scoped) leads() bool {
	if s.elected == nil {
		return true
	}
	select {
	case <-s.elected:
		return true
	default:
		return false
	}
}

// Start follows the Nodes, watching the pods of those that need it, until
// ctx ends.
func (s *Scoped) Start(ctx context.Context) error {
	if s.Log.GetSink() != nil {
		ctx = ctrl.LoggerInto(ctx, s.Log)
	}
	inf, err := s.nodes.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	s.mu.Lock()
	s.ctx = ctx
	s.settle()
	s.mu.Unlock()
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.nodeSeen(obj) },
		UpdateFunc: func(_, obj any) { s.nodeSeen(obj) },
		DeleteFunc: func(obj any) { s.nodeGone(obj) },
	})
	if err != nil {
		return fmt.Errorf("follow nodes: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	ctrl.LoggerFrom(ctx).Info("Watching the pods of the nodes in trouble only", "nodeLimit", s.limit)
	if !s.leads() {
		go func() {
			select {
			case <-s.elected:
				s.mu.Lock()
				s.settle()
				s.mu.Unlock()
			case <-ctx.Done():
			}
		}()
	}
	t := s.clock.NewTicker(s.linger)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.stopAll()
			s.mu.Unlock()
			return nil
		case <-t.C():
			s.sweep()
		}
	}
}

// On returns the node's pods once they are listed. A node not watched yet
// is from now on, as if expected.
func (s *Scoped) On(_ context.Context, node string) ([]corev1.Pod, error) {
	s.mu.Lock()
	w := s.want(node)
	w.expected = s.clock.Now()
	var store toolscache.Indexer
	var list func() ([]any, error)
	switch {
	case w.watch != nil && w.watch.listed():
		store = w.watch.inf.GetIndexer()
		list = func() ([]any, error) { return store.List(), nil }
	case s.wide != nil && s.wide.listed():
		store = s.wide.inf.GetIndexer()
		list = func() ([]any, error) { return store.ByIndex(byNode, node) }
	}
	s.mu.Unlock()
	if list == nil {
		return nil, fmt.Errorf("pods on node %q: %w", node, ErrNotListed)
	}
	objs, err := list()
	if err != nil {
		return nil, fmt.Errorf("pods on node %q: %w", node, err)
	}
	pods := make([]corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, *p.DeepCopy())
		}
	}
	return pods, nil
}

// Expect starts watching the node's pods, for at least linger.
func (s *Scoped) Expect(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want(node).expected = s.clock.Now()
}

// want returns the node's entry, adding it, and its watch, if need be.
// Called with mu held.
func (s *Scoped) want(node string) *wanted {
	w, ok := s.wanted[node]
	if !ok {
		w = &wanted{}
		s.wanted[node] = w
		s.settle()
	}
	return w
}

func (s *Scoped) nodeSeen(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	needed := Needs(node)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.wanted[node.Name]
	switch {
	case needed && !ok:
		s.want(node.Name).needed = true
	case ok:
		w.needed = needed
		if !needed && s.clock.Since(w.expected) >= s.linger {
			s.release(node.Name)
		}
	}
}

func (s *Scoped) nodeGone(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.wanted[node.Name]; ok {
		s.release(node.Name)
	}
}

// sweep releases the nodes expected more than linger ago that nothing
// about them needs watched.
func (s *Scoped) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, w := range s.wanted {
		if !w.needed && s.clock.Since(w.expected) >= s.linger {
			s.release(name)
		}
	}
}

// release stops watching the node's pods. Called with mu held.
func (s *Scoped) release(node string) {
	if w := s.wanted[node]; w.watch != nil {
		w.watch.stop()
	}
	delete(s.wanted, node)
	s.settle()
}

// settle starts and stops watches to serve the wanted nodes: one watch per
// node up to the limit, one watch of every pod above it, down to half of
// it. Either way round, the watches in place are stopped only once those
// replacing them have listed. A standby stays below the limit: the nodes
// beyond it get no watch until it leads. Called with mu held.
func (s *Scoped) settle() {
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	leads := s.leads()
	switch n := len(s.wanted); {
	case !s.wideMode && n > s.limit && !leads:
		// The nodes beyond the limit wait below for this replica to lead.
	case !s.wideMode && n > s.limit:
		s.wideMode = true
		ctrl.LoggerFrom(s.ctx).Info("Watching every pod: more nodes need their pods than the limit", "nodes", n, "nodeLimit", s.limit)
	case s.wideMode && n <= s.limit/2:
		s.wideMode = false
		ctrl.LoggerFrom(s.ctx).Info("Watching the pods of the nodes in trouble only again", "nodes", n, "nodeLimit", s.limit)
	}
	if s.wideMode {
		if s.wide == nil {
			s.wide = s.startWatch("")
		}
		if s.wide.listed() {
			s.stopNodeWatches()
		}
	} else {
		all := true
		watched := 0
		for _, w := range s.wanted {
			if w.watch != nil {
				watched++
			}
		}
		for name, w := range s.wanted {
			if w.watch == nil {
				if !leads && watched >= s.limit {
					all = false
					continue
				}
				w.watch = s.startWatch(name)
				watched++
			}
			all = all && w.watch.listed()
		}
		if s.wide != nil && all {
			s.wide.stop()
			s.wide = nil
		}
	}
	s.count()
}

// stopAll stops every watch. Called with mu held.
func (s *Scoped) stopAll() {
	s.stopNodeWatches()
	if s.wide != nil {
		s.wide.stop()
		s.wide = nil
	}
	s.count()
}

// stopNodeWatches stops the watches of one node's pods. Called with mu
// held.
func (s *Scoped) stopNodeWatches() {
	for _, w := range s.wanted {
		if w.watch != nil {
			w.watch.stop()
			w.watch = nil
		}
	}
}

// count sets the watch gauges. Called with mu held.
func (s *Scoped) count() {
	n := 0
	for _, w := range s.wanted {
		if w.watch != nil {
			n++
		}
	}
	podWatches.WithLabelValues(scopeNode).Set(float64(n))
	wide := 0.0
	if s.wide != nil {
		wide = 1
	}
	podWatches.WithLabelValues(scopeCluster).Set(wide)
}

// listedNow is told by a watch that it has listed: the nodes it serves are
// queued through every Source, and watches it replaces are stopped.
func (s *Scoped) listedNow(w *watch) {
	s.mu.Lock()
	var nodes []string
	switch {
	case w.node == "" && s.wide == w:
		for name := range s.wanted {
			nodes = append(nodes, name)
		}
	case w.node != "":
		if cur, ok := s.wanted[w.node]; ok && cur.watch == w {
			nodes = []string{w.node}
		}
	}
	if len(nodes) > 0 {
		s.settle()
	}
	subs := s.subscribers()
	s.mu.Unlock()
	for _, sub := range subs {
		for _, n := range nodes {
			sub.queue.Add(reconcile.Request{NamespacedName: nodeKey(n)})
		}
	}
}
