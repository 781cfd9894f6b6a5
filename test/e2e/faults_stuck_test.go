package e2e

import (
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

var _ = Describe("A stuck request", Label("faults"), func() {
	It("holds no worker for good: a mark whose request never gets an answer is sent again", func() {
		const timeout = 3 * time.Second
		var (
			once  sync.Once
			stuck = make(chan struct{})
			ended = make(chan struct{})
		)
		liveNode()
		dead, fail := failingNode()
		// The first status write of the dead node goes into a connection
		// that never answers, as one through a proxy that stopped
		// forwarding would.
		p := startProxy(func(_ http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodPatch || r.URL.Path != "/api/v1/nodes/"+dead+"/status" {
				return false
			}
			hang := false
			once.Do(func() { hang = true })
			if !hang {
				return false
			}
			close(stuck)
			select {
			case <-r.Context().Done():
			case <-ended:
			}
			return true
		})
		// Before the proxy closes, which waits for its handlers.
		DeferCleanup(func() { close(ended) })
		runManagerOn(p.config(), nil, func(o *options.Options) { o.ReconcileTimeout = timeout })

		By("the node dying, and its mark stuck")
		stopped := fail()
		Eventually(stuck).WithTimeout(grace + 5*time.Second).Should(BeClosed())

		By("the mark sent again once the stuck one times out")
		Eventually(readyStatus(dead)).WithTimeout(grace + timeout + 5*time.Second).Should(Equal(markedUnknown))
		GinkgoWriter.Printf("marked %v after its heartbeats stopped\n", time.Since(stopped).Round(time.Millisecond))
	})
})
