package reporter

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NewHeartbeatClient returns a client for heartbeats built from a copy of
// cfg: protobuf on the wire, no client-side throttling (a heartbeat held
// back by a rate limiter is a heartbeat missed), and every request bounded by
// timeout, which should not exceed the lease duration so that a hung request
// cannot outlive the Lease it renews. The returned func closes the idle
// connections of the client's transport; pass it as Config.OnRepeatedFailure
// so that a connection that died silently is not reused forever.
//
// One client can serve a whole fleet of reporters.
func NewHeartbeatClient(cfg *rest.Config, timeout time.Duration) (kubernetes.Interface, func(), error) {
	if cfg == nil {
		return nil, nil, errors.New("heartbeat client: nil rest config")
	}
	if timeout <= 0 {
		return nil, nil, fmt.Errorf("heartbeat client: timeout must be positive, got %v", timeout)
	}
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.QPS = -1
	c.RateLimiter = nil
	c.Timeout = timeout
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat client: build HTTP client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat client: %w", err)
	}
	closeIdle := func() { utilnet.CloseIdleConnectionsFor(httpClient.Transport) }
	return client, closeIdle, nil
}
