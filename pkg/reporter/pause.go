package reporter

import (
	"context"
	"sync"
)

// gate lets the loops write only while the reporter is not paused. Each
// unpaused stretch of a run has its own context, canceled by the pause that
// ends it, so that waits and requests under way stop with it.
type gate struct {
	mu     sync.Mutex
	paused bool
	// parent is the context of the running Run; nil when not running.
	parent context.Context
	// active is the context of the current unpaused stretch; nil when
	// paused or not running.
	active context.Context
	cancel context.CancelFunc
	// resumed is closed by the Resume that ends the current pause.
	resumed chan struct{}
}

func (g *gate) start(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.parent = ctx
	if !g.paused {
		g.active, g.cancel = context.WithCancel(ctx)
	}
}

func (g *gate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
	g.parent, g.active, g.cancel = nil, nil, nil
}

func (g *gate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return
	}
	g.paused = true
	g.resumed = make(chan struct{})
	if g.cancel != nil {
		g.cancel()
	}
	g.active, g.cancel = nil, nil
}

func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		return
	}
	g.paused = false
	if g.parent != nil {
		g.active, g.cancel = context.WithCancel(g.parent)
	}
	close(g.resumed)
}

func (g *gate) isPaused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

// await blocks while the reporter is paused and returns the context of the
// unpaused stretch, or false once ctx, the context of Run, has ended.
func (g *gate) await(ctx context.Context) (context.Context, bool) {
	for {
		g.mu.Lock()
		active, resumed := g.active, g.resumed
		paused := g.paused
		g.mu.Unlock()
		if ctx.Err() != nil {
			return nil, false
		}
		if !paused && active != nil {
			return active, true
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-resumed:
		}
	}
}
