package parallel

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEachBoundsConcurrencyAndJoinsErrors(t *testing.T) {
	const workers = 4
	var running, peak atomic.Int32
	started := make(chan struct{}, 50)
	gate := make(chan struct{})
	go func() {
		// Four calls run at once before any may finish.
		for range workers {
			<-started
		}
		close(gate)
	}()
	items := make([]int, 50)
	for i := range items {
		items[i] = i
	}
	boom := errors.New("boom")
	err := ForEach(items, workers, func(i int) error {
		raise(&peak, running.Add(1))
		defer running.Add(-1)
		started <- struct{}{}
		<-gate
		if i%10 == 0 {
			return boom
		}
		return nil
	})
	if p := peak.Load(); p > workers {
		t.Fatalf("peak concurrency %d, want at most %d", p, workers)
	}
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

// raise sets peak to n if n is higher.
func raise(peak *atomic.Int32, n int32) {
	for {
		p := peak.Load()
		if n <= p || peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func TestForEachTriesEveryItemAndReportsEveryError(t *testing.T) {
	var calls atomic.Int32
	errs := []error{errors.New("a"), errors.New("b"), errors.New("c")}
	err := ForEach([]int{0, 1, 2, 3}, 2, func(i int) error {
		calls.Add(1)
		if i < len(errs) {
			return errs[i]
		}
		return nil
	})
	if n := calls.Load(); n != 4 {
		t.Fatalf("fn called %d times, want 4", n)
	}
	for _, want := range errs {
		if !errors.Is(err, want) {
			t.Errorf("err = %v, want it to include %v", err, want)
		}
	}
}

func TestForEachWithNoWorkersRunsOneAtATime(t *testing.T) {
	var running, peak atomic.Int32
	err := ForEach([]int{1, 2, 3}, 0, func(int) error {
		raise(&peak, running.Add(1))
		defer running.Add(-1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 1 {
		t.Fatalf("peak concurrency %d, want 1", p)
	}
}
