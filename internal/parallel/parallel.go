// Package parallel runs independent API writes with bounded concurrency, so
// that the pods of a node are handled together rather than one after
// another, without flooding the apiserver.
package parallel

import (
	"errors"

	"golang.org/x/sync/errgroup"
)

// ForEach calls fn for every item, at most workers at a time, and returns
// the errors joined.
//
// It wraps an errgroup rather than returning the group's error because
// callers need every item tried and every failure reported, where an
// errgroup keeps only the first.
func ForEach[T any](items []T, workers int, fn func(T) error) error {
	errs := make([]error, len(items))
	var g errgroup.Group
	g.SetLimit(max(workers, 1))
	for i, item := range items {
		g.Go(func() error {
			errs[i] = fn(item)
			return nil
		})
	}
	_ = g.Wait() // every function returns nil: the errors are in errs
	return errors.Join(errs...)
}
