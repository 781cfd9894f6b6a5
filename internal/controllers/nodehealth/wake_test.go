package nodehealth

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// startWakes runs w on a work queue until the test ends and returns the
// nodes it queues, in batches of those due together. A node queued ahead of
// other work, its deadline passed, is named with a leading "!".
func startWakes(t *testing.T, w *wakes) <-chan []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	q := priorityqueue.New[reconcile.Request]("test")
	if err := w.source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		for {
			req, priority, shutdown := q.GetWithPriority()
			if shutdown {
				return
			}
			q.Done(req)
			if priority == markPriority {
				req.Name = "!" + req.Name
			}
			select {
			case got <- req.Name:
			case <-ctx.Done():
				return
			}
		}
	}()
	queued := make(chan []string, 10)
	go func() {
		for {
			var batch []string
			select {
			case name := <-got:
				batch = append(batch, name)
			case <-ctx.Done():
				return
			}
			// A batch ends when nothing else is due at once.
			for more := true; more; {
				select {
				case name := <-got:
					batch = append(batch, name)
				case <-time.After(50 * time.Millisecond):
					more = false
				}
			}
			queued <- slices.Sorted(slices.Values(batch))
		}
	}()
	t.Cleanup(func() {
		cancel()
		q.ShutDown()
	})
	return queued
}

// stepTo waits for the wakes' timer, then moves the clock to t0+to.
func stepTo(clk *clocktesting.FakeClock, to time.Duration) {
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.SetTime(t0.Add(to))
}

// TestWakesReconcileOnlyPassedDeadlines: a deadline wake whose node heard a
// heartbeat meanwhile is set again for the new deadline without a
// reconcile; one whose deadline has passed queues the node.
func TestWakesReconcileOnlyPassedDeadlines(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	deadlines := map[string]time.Time{"renewed": t0.Add(10 * time.Second), "silent": t0.Add(10 * time.Second)}
	w := newWakes(clk, func(name string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		d, ok := deadlines[name]
		return d, ok
	})
	queued := startWakes(t, w)

	w.set("renewed", safety.Next{At: t0.Add(10 * time.Second), Deadline: true})
	w.set("silent", safety.Next{At: t0.Add(10 * time.Second), Deadline: true})
	w.set("cleared", safety.Next{At: t0.Add(5 * time.Second), Deadline: true})
	w.clear("cleared")
	// The renewed node hears a heartbeat at 8s: its deadline moves to 18s.
	mu.Lock()
	deadlines["renewed"] = t0.Add(18 * time.Second)
	mu.Unlock()

	stepTo(clk, 10*time.Second)
	if got := <-queued; !slices.Equal(got, []string{"!silent"}) {
		t.Fatalf("at 10s queued %v, want [!silent]", got)
	}
	if at, ok := w.when("renewed"); !ok || !at.Equal(t0.Add(18*time.Second)) {
		t.Fatalf("renewed node's wake = %v, %v; want 18s", at, ok)
	}
	// The silent node's look learns when it was handed over, once.
	if at, ok := w.handedAt("silent"); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("handedAt(silent) = %v, %v; want 10s", at, ok)
	}
	if at, ok := w.handedAt("silent"); ok {
		t.Fatalf("handedAt(silent) again = %v; want nothing: its look took it", at)
	}
	// Handed over again before its look (the resync finds it overdue while
	// it waits in the queue), it has waited since the first hand-over. A
	// wake due when set is handed over at once, the clock standing still.
	w.set("silent", safety.Next{At: t0.Add(10 * time.Second), Deadline: true})
	<-queued
	stepTo(clk, 11*time.Second)
	w.set("silent", safety.Next{At: t0.Add(11 * time.Second), Deadline: true})
	<-queued
	if at, ok := w.handedAt("silent"); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("handedAt(silent) after two hand-overs = %v, %v; want the first, 10s", at, ok)
	}
	if at, ok := w.handedAt("renewed"); ok {
		t.Fatalf("handedAt(renewed) = %v; want nothing: its deadline moved and it was not handed over", at)
	}
	stepTo(clk, 18*time.Second)
	if got := <-queued; !slices.Equal(got, []string{"!renewed"}) {
		t.Fatalf("at 18s queued %v, want [!renewed]", got)
	}
	select {
	case got := <-queued:
		t.Fatalf("queued %v after every wake came", got)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWakesKeepTheEarliestLook: a retry earlier than the deadline comes
// first and is not read again as a deadline; a later one does not put off
// an earlier look; a look due now queues at once.
func TestWakesKeepTheEarliestLook(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	// Every deadline lies ahead: only a retry or now can queue a node.
	w := newWakes(clk, func(string) (time.Time, bool) { return t0.Add(time.Hour), true })
	queued := startWakes(t, w)

	w.set("a", safety.Next{At: t0.Add(time.Hour), Deadline: true})
	w.set("a", safety.Next{At: t0.Add(2 * time.Second)})
	w.set("a", safety.Next{At: t0.Add(30 * time.Second)}) // later: changes nothing
	if at, _ := w.when("a"); !at.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("a's next look at %v, want the retry at 2s", at)
	}
	w.set("b", safety.Next{At: clk.Now()})
	if got := <-queued; !slices.Equal(got, []string{"b"}) {
		t.Fatalf("now queued %v, want [b]", got)
	}
	stepTo(clk, 2*time.Second)
	if got := <-queued; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("at 2s queued %v, want [a]", got)
	}
	// The reconcile that follows sets the deadline again, in place of
	// what was left.
	w.set("a", safety.Next{At: t0.Add(time.Hour), Deadline: true})
	if at, _ := w.when("a"); !at.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a's next look at %v, want its deadline", at)
	}
}

// TestWakesQueueOverdueNodesFirst: a node the resync finds overdue is
// queued ahead of other work if its deadline still has passed when its
// wake comes, and set again for its deadline if a heartbeat moved it; a
// node looked at for anything else is queued behind.
func TestWakesQueueOverdueNodesFirst(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	deadlines := map[string]time.Time{"overdue": t0.Add(-time.Second), "heard": t0.Add(time.Minute), "other": t0.Add(time.Minute)}
	w := newWakes(clk, func(name string) (time.Time, bool) {
		d, ok := deadlines[name]
		return d, ok
	})
	// As the resync wakes them (act.Executor.Resync).
	w.set("overdue", safety.Next{At: t0, Deadline: true})
	w.set("heard", safety.Next{At: t0, Deadline: true})
	w.set("other", safety.Next{At: t0})
	queued := startWakes(t, w)
	if got := <-queued; !slices.Equal(got, []string{"!overdue", "other"}) {
		t.Fatalf("queued %v, want [!overdue other]", got)
	}
	if at, ok := w.when("heard"); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("heard node's wake = %v, %v; want its deadline", at, ok)
	}
}

// TestWakesReadDeadlinesAheadOfTheirTime: a wake that comes also reads the
// deadlines of the deadline wakes due within lookAhead, and sets again at
// once those a heartbeat moved, so that one timer serves them all; a
// deadline that stands, a retry, and a wake past lookAhead keep their
// time, and a deadline that moved back is looked at at its new time.
func TestWakesReadDeadlinesAheadOfTheirTime(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	deadlines := map[string]time.Time{
		"due": ms(60_000), "moved": ms(61_000), "silent": ms(10_800),
		"back": ms(5_000), "later": ms(70_000),
	}
	w := newWakes(clocktesting.NewFakeClock(t0), func(name string) (time.Time, bool) {
		d, ok := deadlines[name]
		return d, ok
	})
	w.set("due", safety.Next{At: ms(10_000), Deadline: true})
	w.set("moved", safety.Next{At: ms(10_500), Deadline: true})
	w.set("silent", safety.Next{At: ms(10_800), Deadline: true})
	w.set("back", safety.Next{At: ms(10_900), Deadline: true})
	w.set("later", safety.Next{At: ms(10_000).Add(lookAhead + time.Millisecond), Deadline: true})
	w.set("retry", safety.Next{At: ms(10_400)})

	if expired, rest := w.due(ms(10_000)); len(expired)+len(rest) != 0 {
		t.Fatalf("at 10s: queued %v and %v, want nothing: no deadline had passed", expired, rest)
	}
	for name, want := range map[string]time.Time{
		"due": ms(60_000), "moved": ms(61_000), "silent": ms(10_800), "back": ms(5_000),
		"later": ms(10_000).Add(lookAhead + time.Millisecond), "retry": ms(10_400),
	} {
		if at, ok := w.when(name); !ok || !at.Equal(want) {
			t.Errorf("%s's wake = %v, %v; want %v", name, at, ok, want)
		}
	}
	for _, step := range []struct {
		at            time.Time
		expired, rest []string
	}{
		{at: ms(5_000), expired: []string{"back"}},
		{at: ms(10_400), rest: []string{"retry"}},
		{at: ms(10_800), expired: []string{"silent"}},
	} {
		next, ok := w.next()
		if !ok || !next.Equal(step.at) {
			t.Fatalf("next wake at %v, %v; want %v", next, ok, step.at)
		}
		expired, rest := w.due(ms(10_000).Add(max(step.at.Sub(ms(10_000)), 0)))
		if !slices.Equal(expired, step.expired) || !slices.Equal(rest, step.rest) {
			t.Fatalf("at %v: queued %v first and %v, want %v and %v", step.at.Sub(t0), expired, rest, step.expired, step.rest)
		}
	}
}

// TestWakeQueueOrdersByTime: whatever the order of pushes, pops come
// earliest first, equal times included.
func TestWakeQueueOrdersByTime(t *testing.T) {
	offsets := []int{7, 3, 9, 3, 0, 12, 5, 1, 8, 8, 2, 11, 6, 4, 10}
	var q wakeQueue
	for i, o := range offsets {
		q.push(queued{at: t0.Add(time.Duration(o) * time.Second), name: strconv.Itoa(i)})
	}
	want := slices.Sorted(slices.Values(offsets))
	for i, o := range want {
		got := q.pop()
		if !got.at.Equal(t0.Add(time.Duration(o) * time.Second)) {
			t.Fatalf("pop %d: %v, want +%ds", i, got.at.Sub(t0), o)
		}
	}
	if len(q) != 0 {
		t.Fatalf("%d left after every pop", len(q))
	}
}

// TestANodePastItsDeadlineIsTakenFirst: a node the wakes send as expired is
// taken from the controller's work queue before nodes queued earlier by
// watch events.
func TestANodePastItsDeadlineIsTakenFirst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	for _, name := range []string{"event-1", "event-2"} {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	addFirst(q, "expired")
	got, priority, _ := q.GetWithPriority()
	if got.Name != "expired" || priority != markPriority {
		t.Fatalf("took %s at priority %d first, want expired at %d", got.Name, priority, markPriority)
	}
}
