// Package parallel runs independent API writes with bounded concurrency, so
// that the pods of a node are handled together rather than one after
// another, without flooding the apiserver.
package parallel

import (
	"errors"
	"sync"
)

// ForEach calls fn for every item, at most workers at a time, and returns
// the errors joined.
func ForEach[T any](items []T, workers int, fn func(T) error) error {
	errs := make([]error, len(items))
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(item)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
