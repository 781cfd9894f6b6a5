package harness

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
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
	return SecurePort{Addr: addr, Client: selfSignedClient(nil)}, nil
}

// CertClient returns a client of a secure port that presents the client
// certificate of u, a user of an envtest control plane, whose client CA the
// port trusts.
func CertClient(u *envtest.AuthenticatedUser) (*http.Client, error) {
	cfg := u.Config()
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, fmt.Errorf("client certificate of %s: %w", cfg.Username, err)
	}
	return selfSignedClient([]tls.Certificate{cert}), nil
}

// selfSignedClient returns a client that presents certs and trusts any
// server certificate: the controller's own, self-signed, on loopback.
func selfSignedClient(certs []tls.Certificate) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates:       certs,
		InsecureSkipVerify: true, //nolint:gosec // a self-signed certificate on loopback
	}}}
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
