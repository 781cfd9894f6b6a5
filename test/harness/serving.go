package harness

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// SecurePort is the secure port of a controller process that a tool or a
// suite starts: a free loopback port, and a client for the certificate the
// process makes itself at start.
type SecurePort struct {
	// Addr is the port's loopback address, host:port.
	Addr string
	// Client trusts any certificate: the process's own, self-signed, on
	// loopback.
	Client *http.Client
}

// NewSecurePort finds a free loopback port for a controller's secure port.
func NewSecurePort() (SecurePort, error) {
	addr, err := FreeLocalAddr()
	if err != nil {
		return SecurePort{}, err
	}
	return SecurePort{Addr: addr, Client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a self-signed certificate on loopback
	}}}, nil
}

// Flags are the flags that serve the port, kube-controller-manager's. Paths
// in open are served to anyone, as /healthz, /livez and /readyz always are:
// the others need a caller the apiserver authenticates and authorizes.
func (s SecurePort) Flags(open ...string) []string {
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		// Addr is FreeLocalAddr's, which always splits.
		panic(fmt.Sprintf("secure port address %q: %v", s.Addr, err))
	}
	flags := []string{"--bind-address=" + host, "--secure-port=" + port}
	if len(open) > 0 {
		flags = append(flags, "--authorization-always-allow-paths="+strings.Join(append([]string{"/healthz", "/livez", "/readyz"}, open...), ","))
	}
	return flags
}

// URL returns the URL of path on the port.
func (s SecurePort) URL(path string) string { return "https://" + s.Addr + path }
