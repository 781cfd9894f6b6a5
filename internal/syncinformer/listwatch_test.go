package syncinformer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

// TestListInPagesStripsEachPageBeforeTheNext: on a real apiserver, the
// first list asks for the latest revision, which the apiserver serves in
// pages (at resourceVersion 0 it would send everything at once), and what
// the transform drops from one page is gone before the next is asked for;
// the informer syncs every node, stripped, and watches from the list's
// revision.
func TestListInPagesStripsEachPageBeforeTheNext(t *testing.T) {
	_, cfg := testenv.Start(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	const nodes, pageSize = 5, 2
	for i := range nodes {
		n := testobj.Node(fmt.Sprintf("n%d", i))
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 1 << 20}}
		created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = n.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var asked []metav1.ListOptions
	var pages []*corev1.NodeList
	var fail []string
	var watchedFrom string
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, o)
			for _, p := range pages {
				for _, n := range p.Items {
					if n.Status.Images != nil {
						fail = append(fail, fmt.Sprintf("page %d asked for with %s's images still held", len(asked), n.Name))
					}
				}
			}
			o.Limit = pageSize // as the reflector's 500, for a fleet of more
			l, err := cs.CoreV1().Nodes().List(ctx, o)
			if err == nil {
				pages = append(pages, l)
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			mu.Lock()
			watchedFrom = o.ResourceVersion
			mu.Unlock()
			return cs.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	strip := func(obj any) (any, error) {
		obj.(*corev1.Node).Status.Images = nil
		return obj, nil
	}
	inf := New(ListInPages(lw, strip), &corev1.Node{}, 0, cache.Indexers{})
	if err := inf.SetTransform(strip); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go inf.RunWithContext(runCtx)
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}

	mu.Lock()
	defer mu.Unlock()
	for _, f := range fail {
		t.Error(f)
	}
	if len(asked) != (nodes+pageSize-1)/pageSize {
		t.Errorf("%d pages asked for, want %d: %+v", len(asked), (nodes+pageSize-1)/pageSize, asked)
	}
	if len(asked) == 0 || asked[0].ResourceVersion != "" || asked[0].Limit == 0 {
		t.Errorf("first page asked with %+v, want the latest revision, in pages", asked)
	}
	if rv := pages[0].ResourceVersion; watchedFrom != rv {
		t.Errorf("watched from %q, want the list's revision %q", watchedFrom, rv)
	}
	if got := len(inf.GetStore().List()); got != nodes {
		t.Errorf("%d nodes stored, want %d", got, nodes)
	}
}

// TestListThenWatchListsTheWatchCacheAsItStands: unpaged, the first list
// is asked for at resourceVersion 0, as the reflector asks.
func TestListThenWatchListsTheWatchCacheAsItStands(t *testing.T) {
	var got []metav1.ListOptions
	lw := &cache.ListWatch{ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		got = append(got, o)
		return &corev1.NodeList{}, nil
	}}
	if _, err := ListThenWatch(lw).(cache.ListerWatcherWithContext).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := ListInPages(lw, nil).(cache.ListerWatcherWithContext).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ResourceVersion != "0" || got[1].ResourceVersion != "" {
		t.Errorf("asked %+v, want resourceVersion 0 unpaged and the latest revision paged", got)
	}
}
