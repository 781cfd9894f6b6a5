package e2e

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// watchHold stalls the watch streams of some resources while it is held:
// the events wait in the connection, and arrive late, in a burst, when it is
// let go, as from an apiserver or a network that falls behind.
type watchHold struct {
	// resources are the plural names of the resources whose watches stall.
	resources []string
	mu        sync.Mutex
	release   chan struct{} // closed while the streams flow
}

// newWatchHold stalls the watches of Nodes and Leases.
func newWatchHold() *watchHold { return newWatchHoldOf("nodes", "leases") }

// newWatchHoldOf stalls the watches of the named resources.
func newWatchHoldOf(resources ...string) *watchHold {
	h := &watchHold{resources: resources, release: make(chan struct{})}
	close(h.release)
	return h
}

// hold stalls the streams until let is called.
func (h *watchHold) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release = make(chan struct{})
}

func (h *watchHold) let() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *watchHold) flowing() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.release
}

// wrap fits rest.Config.Wrap.
func (h *watchHold) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		watched := slices.ContainsFunc(h.resources, func(r string) bool { return strings.HasSuffix(req.URL.Path, "/"+r) })
		if err != nil || req.URL.Query().Get("watch") != "true" || !watched {
			return resp, err
		}
		resp.Body = &heldBody{ReadCloser: resp.Body, hold: h, done: req.Context().Done()}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// heldBody is a watch stream that reads nothing while its hold is held.
type heldBody struct {
	io.ReadCloser
	hold *watchHold
	done <-chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	select {
	case <-b.hold.flowing():
	case <-b.done:
	}
	return b.ReadCloser.Read(p)
}

// laggingCache builds the manager's cache on watches that h can stall; the
// manager's live reads are left alone.
func laggingCache(h *watchHold) func(*ctrl.Options) {
	return func(o *ctrl.Options) {
		o.NewCache = func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
			config = rest.CopyConfig(config)
			config.Wrap(h.wrap)
			// The manager hands the cache its shared HTTP client; the
			// cache gets one of its own, on the stalling transport.
			httpClient, err := rest.HTTPClientFor(config)
			if err != nil {
				return nil, err
			}
			opts.HTTPClient = httpClient
			return cache.New(config, opts)
		}
	}
}

var _ = Describe("Lagging watch", Label("faults"), func() {
	It("marks no live node while the controller's watches fall behind, and still marks the one that stops", func() {
		hold := newWatchHold()
		DeferCleanup(hold.let)
		runManager(laggingCache(hold))
		f := startFleet(6, 3)
		Eventually(nodesReadyAndUntainted(f.Nodes()...)).Should(Succeed())
		dead, live := f.Nodes()[0], f.Nodes()[1:]
		marksBefore := markDelays().GetSampleCount()

		By("the Node and Lease watches stalling for three grace periods while the nodes renew")
		hold.hold()
		stalled := time.Now()
		f.Stop(dead)
		Eventually(readyStatus(dead)).WithTimeout(grace + 5*time.Second).Should(Equal(markedUnknown))
		GinkgoWriter.Printf("the stopped node was marked %v into the stall\n", time.Since(stalled).Round(time.Millisecond))
		Consistently(nodesReadyAndUntainted(live...)).WithTimeout(3*grace - time.Since(stalled)).Should(Succeed())
		Expect(markDelays().GetSampleCount()-marksBefore).To(BeNumerically("==", 1), "only the stopped node may be marked")

		By("the watches catching up, and nothing changing for the live nodes")
		hold.let()
		Consistently(nodesReadyAndUntainted(live...)).WithTimeout(grace).Should(Succeed())
		Expect(readyStatus(dead)(Default)).To(Equal(markedUnknown))
	})
})
