package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// TestInstallersRBACRunsTheControllerAndServesItsSecurePort runs the binary
// as the installer's ServiceAccount, with only the RBAC the installer grants
// it, against an apiserver the installer was applied to: the controller must
// start and sync its caches (the secure port's /readyz), check bearer tokens
// with TokenReview and SubjectAccessReview, and watch the client CA in
// kube-system's ConfigMap extension-apiserver-authentication to trust client
// certificates. So it serves /metrics to a ServiceAccount and to a client
// certificate's user bound to the installer's metrics-reader ClusterRole,
// and to no other.
func TestInstallersRBACRunsTheControllerAndServesItsSecurePort(t *testing.T) {
	env, c, objs := applyInstaller(t, "config/default")
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))

	// Scrapers bound to the installer's metrics-reader, by token and by
	// client certificate, and a stranger bound to nothing. They are bound
	// before the controller starts: it caches the apiserver's answers about
	// a caller for a few seconds.
	if !has(objs, "ClusterRole", metricsReader) {
		t.Fatalf("The installer renders no ClusterRole %s", metricsReader)
	}
	scraper := newServiceAccountToken(t, c, dep.Namespace, "scraper")
	stranger := newServiceAccountToken(t, c, dep.Namespace, "stranger")
	certUser, err := env.AddUser(envtest.User{Name: "cert-scraper"}, nil)
	if err != nil {
		t.Fatalf("Add a user with a client certificate: %v", err)
	}
	bindMetricsReader(t, c, "scrapers",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: dep.Namespace},
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "cert-scraper"})

	port := runAsInstalled(t, env, c, objs)
	// It leads on the Lease in kube-system, the only one its Role grants,
	// without being told where.
	waitForLeader(t, c, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "node-lifecycle-controller"})
	metrics := port.URL("/metrics")
	waitForStatus(t, port.Client, metrics, scraper, http.StatusOK, "node_lifecycle_partition_freeze")
	waitForStatus(t, port.Client, metrics, stranger, http.StatusForbidden, "")
	// Without the authentication reader RoleBinding the controller cannot
	// watch the client CA, and takes the certificate's user for anonymous.
	waitForStatus(t, certClient(t, certUser), metrics, "", http.StatusOK, "node_lifecycle_partition_freeze")
}

// applyInstaller renders the installer in dir, relative to the module root,
// and applies it for real to an apiserver of its own, which it returns with
// an admin's client and the objects applied.
func applyInstaller(t *testing.T, dir string) (*envtest.Environment, client.Client, []*unstructured.Unstructured) {
	t.Helper()
	objs := render(t, dir)
	env, c := applyObjects(t, objs)
	return env, c, objs
}

// applyObjects applies objs for real to an apiserver of its own, which it
// returns with an admin's client.
func applyObjects(t *testing.T, objs []*unstructured.Unstructured) (*envtest.Environment, client.Client) {
	t.Helper()
	env, c, _ := startAPIServer(t)
	installOn(t, c, objs)
	if t.Failed() {
		t.FailNow()
	}
	// installOn created the Namespace and the CRD; the rest for real too.
	for _, obj := range inApplyOrder(objs) {
		if obj.GetKind() == "Namespace" || obj.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if err := c.Create(t.Context(), obj.DeepCopy(), strict); err != nil {
			t.Fatalf("Create %s: %v", describe(obj), err)
		}
	}
	return env, c
}

// runAsInstalled runs the binary as a pod of the Deployment of objs would,
// until the test ends: with the Deployment's args, then extra, as the
// installer's ServiceAccount, and waits until its secure port's /readyz
// answers. It returns that port.
func runAsInstalled(t *testing.T, env *envtest.Environment, c client.Client, objs []*unstructured.Unstructured, extra ...string) harness.SecurePort {
	t.Helper()
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	sa := convert[corev1.ServiceAccount](t, one(t, objs, "ServiceAccount"))
	if name := dep.Spec.Template.Spec.ServiceAccountName; name != sa.Name {
		t.Fatalf("Deployment runs as ServiceAccount %q, not the rendered %s", name, sa.Name)
	}

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeTokenKubeconfig(t, env.Config, serviceAccountToken(t, c, sa), kubeconfig)
	binary := buildController(t, dir)

	// The Deployment's own args, then what the pod would otherwise get from
	// its ServiceAccount mount and its network: the identity, and a free
	// loopback port in place of the container port. The leader election
	// Lease is in kube-system by default, where the installer's Role
	// grants it.
	port, err := harness.NewSecurePort()
	if err != nil {
		t.Fatal(err)
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	args := slices.Concat(ctr.Args, extra, []string{"--kubeconfig=" + kubeconfig}, port.Flags())
	logPath := filepath.Join(dir, "controller.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := harness.StartProcess(binary, args, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("Stop the controller: %v", err)
		}
		_ = log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("The controller's log:\n%s", out)
		}
	})
	if err := p.WaitReady(t.Context(), port.Client, port.URL("/readyz"), time.Minute); err != nil {
		t.Fatalf("The controller, with the installer's RBAC: %v", err)
	}
	return port
}

// waitForLeader waits until the Lease key has a holder, and fails t if it
// has none within 30s.
func waitForLeader(t *testing.T, c client.Client, key client.ObjectKey) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	poll(t, 30*time.Second, func() error {
		if err := c.Get(t.Context(), key, lease); err != nil {
			return err
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return fmt.Errorf("the Lease %s has no holder", key)
		}
		return nil
	})
}

// poll calls check every 200ms until it returns nil, and fails t with its
// last error if it does not within timeout.
func poll(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("After %v: %v", timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%v: %v", t.Context().Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// certClient returns a client that presents u's client certificate.
func certClient(t *testing.T, u *envtest.AuthenticatedUser) *http.Client {
	t.Helper()
	c, err := harness.CertClient(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// buildController builds the controller's binary into dir and returns its
// path.
func buildController(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "node-lifecycle-controller")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", path, ".")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// newServiceAccountToken creates the ServiceAccount namespace/name and
// returns a token the apiserver issued for it.
func newServiceAccountToken(t *testing.T, c client.Client, namespace, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := c.Create(t.Context(), sa); err != nil {
		t.Fatalf("Create ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return serviceAccountToken(t, c, sa)
}

// serviceAccountToken returns a token the apiserver issued for sa, as the
// kubelet mounts into sa's pods.
func serviceAccountToken(t *testing.T, c client.Client, sa *corev1.ServiceAccount) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := c.SubResource("token").Create(t.Context(), sa, req); err != nil {
		t.Fatalf("Request a token for ServiceAccount %s/%s: %v", sa.Namespace, sa.Name, err)
	}
	if strings.TrimSpace(req.Status.Token) == "" {
		t.Fatalf("The apiserver issued an empty token for ServiceAccount %s/%s", sa.Namespace, sa.Name)
	}
	return req.Status.Token
}

// writeTokenKubeconfig writes to path a kubeconfig for the apiserver of cfg
// that authenticates with token.
func writeTokenKubeconfig(t *testing.T, cfg *rest.Config, token, path string) {
	t.Helper()
	kubeconfig := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"envtest": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"controller": {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{"envtest": {Cluster: "envtest", AuthInfo: "controller"}},
		CurrentContext: "envtest",
	}
	if err := clientcmd.WriteToFile(kubeconfig, path); err != nil {
		t.Fatalf("Write kubeconfig: %v", err)
	}
}

// waitForStatus gets url with the bearer token, if any, until it answers
// status with a body that holds contains, and fails t if it does not within
// 30s: the apiserver takes a moment to honor a new token or binding.
func waitForStatus(t *testing.T, c *http.Client, url, token string, status int, contains string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body, err := get(t.Context(), c, url, token)
		if err == nil && got == status && strings.Contains(body, contains) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s answers %d %.200q (error %v), want %d", url, got, body, err, status)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("GET %s: %v", url, t.Context().Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// get gets url with the bearer token, if any, and returns the status and
// body.
func get(ctx context.Context, c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metricsReader is the installers' ClusterRole that may get /metrics.
const metricsReader = "node-lifecycle-metrics-reader"

// bindMetricsReader binds the installers' metrics-reader ClusterRole to
// subjects, as a user does for Prometheus, in a ClusterRoleBinding named
// after name.
func bindMetricsReader(t *testing.T, c client.Client, name string, subjects ...rbacv1.Subject) {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
		Subjects:   subjects,
	}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatalf("Bind %s to %v: %v", metricsReader, subjects, err)
	}
}
