package serving

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	netutils "k8s.io/utils/net"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// DefaultSecurePort is the port the secure server listens on by default. It
// is not kube-controller-manager's (10257): on a control-plane node both
// run with the host's network while the one replaces the other.
const DefaultSecurePort = 10263

// shutdownTimeout is how long the server lets requests in flight finish
// once the process stops.
const shutdownTimeout = 5 * time.Second

// Options are kube-controller-manager's flags for its secure port: where it
// listens and with which certificate, and who may call it.
type Options struct {
	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// NewOptions returns the options at their defaults: kube-controller-manager's,
// on DefaultSecurePort, with a self-signed certificate kept in memory.
func NewOptions() *Options {
	o := &Options{
		SecureServing:  apiserveroptions.NewSecureServingOptions(),
		Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:  apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
	// As kube-controller-manager: without a kubeconfig for the reviews,
	// the in-cluster configuration, and no certificate written to disk.
	o.Authentication.RemoteKubeConfigFileOptional = true
	o.Authorization.RemoteKubeConfigFileOptional = true
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = "node-lifecycle-controller"
	o.SecureServing.BindPort = DefaultSecurePort
	return o
}

// AddFlags binds the options to kube-controller-manager's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	// Where they differ from kube-controller-manager's: the controller's
	// own kubeconfig stands in for these two.
	if f := fs.Lookup("authentication-kubeconfig"); f != nil {
		f.Usage = "A kubeconfig whose user may create tokenreviews.authentication.k8s.io, to authenticate callers of the secure port, " +
			"and read the client CA in kube-system's ConfigMap extension-apiserver-authentication. Empty means --kubeconfig, " +
			"else the in-cluster configuration; without either, every caller is anonymous and no client CA is looked up."
	}
	if f := fs.Lookup("authorization-kubeconfig"); f != nil {
		f.Usage = "A kubeconfig whose user may create subjectaccessreviews.authorization.k8s.io, to authorize callers of the secure port. " +
			"Empty means --kubeconfig, else the in-cluster configuration; without either, only --authorization-always-allow-paths " +
			"and the system:masters group are allowed."
	}
}

// Validate reports the rules the options break.
func (o *Options) Validate() []error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	return errs
}

// Enabled reports whether the secure port is served: --secure-port=0 turns
// it off.
func (o *Options) Enabled() bool { return o.SecureServing.BindPort != 0 }

// Server is the secure server, its port bound and who may call it settled.
type Server struct {
	info    *server.SecureServingInfo
	handler http.Handler
}

// Content is what the server serves.
type Content struct {
	// Live, Ready and All are the checks of /livez, /readyz and /healthz.
	Live, Ready, All map[string]healthz.Checker
	// Metrics serves /metrics.
	Metrics http.Handler
}

// New binds the secure port and builds the server of c. kubeconfig, the
// controller's own, stands in for --authentication-kubeconfig and
// --authorization-kubeconfig when they are not given, so that a process run
// outside a cluster asks the apiserver it works with about its callers;
// inside a cluster the reviews use the pod's ServiceAccount, as
// kube-controller-manager's do. It returns nil when the port is off.
func New(o *Options, kubeconfig string, c Content) (*Server, error) {
	if !o.Enabled() {
		return nil, nil
	}
	if kubeconfig != "" {
		if o.Authentication.RemoteKubeConfigFile == "" {
			o.Authentication.RemoteKubeConfigFile = kubeconfig
		}
		if o.Authorization.RemoteKubeConfigFile == "" {
			o.Authorization.RemoteKubeConfigFile = kubeconfig
		}
	}
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("secure port: self-signed certificate: %w", err)
	}
	s := &Server{}
	if err := o.SecureServing.ApplyTo(&s.info); err != nil {
		return nil, fmt.Errorf("secure port: %w", err)
	}
	var authn server.AuthenticationInfo
	if err := o.Authentication.ApplyTo(&authn, s.info, nil); err != nil {
		_ = s.info.Listener.Close()
		return nil, fmt.Errorf("secure port: authentication: %w", err)
	}
	var authz server.AuthorizationInfo
	if err := o.Authorization.ApplyTo(&authz); err != nil {
		_ = s.info.Listener.Close()
		return nil, fmt.Errorf("secure port: authorization: %w", err)
	}
	s.handler = chain(routes(c), &authn, &authz)
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.info.Listener.Addr() }

// Start serves until ctx is done, then lets the requests in flight finish.
// It implements controller-runtime's manager.Runnable.
func (s *Server) Start(ctx context.Context) error {
	stopped, _, err := s.info.Serve(s.handler, shutdownTimeout, ctx.Done())
	if err != nil {
		return fmt.Errorf("secure port: %w", err)
	}
	<-stopped
	return nil
}

// NeedLeaderElection reports that every replica serves, leader or not.
func (s *Server) NeedLeaderElection() bool { return false }

// routes returns the handler of each path, before the filters.
func routes(c Content) http.Handler {
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/livez": c.Live, "/readyz": c.Ready, "/healthz": c.All} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		// One check by name, as /readyz/informer-sync.
		mux.Handle(path+"/", h)
	}
	if c.Metrics != nil {
		mux.Handle("/metrics", c.Metrics)
	}
	return mux
}

// chain puts h behind kube-controller-manager's filters: authorization,
// authentication, the request's attributes, no caching, logging and
// recovery from panics.
func chain(h http.Handler, authn *server.AuthenticationInfo, authz *server.AuthorizationInfo) http.Handler {
	resolver := &apirequest.RequestInfoFactory{}
	h = genericapifilters.WithAuthorization(h, authz.Authorizer, clientgoscheme.Codecs)
	h = genericapifilters.WithAuthentication(h, authn.Authenticator, genericapifilters.Unauthorized(clientgoscheme.Codecs), nil, nil)
	h = genericapifilters.WithRequestInfo(h, resolver)
	h = genericapifilters.WithCacheControl(h)
	h = genericfilters.WithHTTPLogging(h)
	return genericfilters.WithPanicRecovery(h, resolver)
}
