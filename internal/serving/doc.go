// Package serving serves the controller's health checks and metrics on one
// secure port, as kube-controller-manager serves its own: HTTPS with a
// self-signed certificate unless one is given, callers authenticated by the
// apiserver (TokenReview, or a client certificate it trusts) and authorized
// by it (SubjectAccessReview), except for /healthz, /livez and /readyz,
// which anyone may ask. The flags are kube-controller-manager's, bound by
// k8s.io/apiserver's options, and the requests go through the same filters.
package serving
