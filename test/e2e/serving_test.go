package e2e

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

var _ = Describe("The secure port", func() {
	It("serves the health checks to anyone and the metrics to callers the apiserver authenticates and authorizes, as kube-controller-manager does", func() {
		ctx := context.Background()
		id := rand.String(5)
		// startControllerProcess serves the secure port on loopback, with
		// the default authentication and authorization: the reviews go
		// to the apiserver of --kubeconfig.
		port, err := harness.NewSecurePort()
		Expect(err).NotTo(HaveOccurred())
		startControllerProcessAt(testEnv, GinkgoWriter, port, "serving-"+id, "serving-"+id)
		// A standby is ready once its own caches have synced; on taking
		// the Lease it starts the controllers, which start their caches
		// in goroutines of their own, a moment later on a loaded machine,
		// and is not ready again until those have synced too: a /readyz
		// answered between the Lease and the controllers' start passes.
		// The checks are read once the verbose one shows them all
		// passing.
		Eventually(leaderLease("serving-" + id)).Should(HaveField("HolderIdentity", Not(BeNil())))
		Eventually(scrape(port.Client, port.URL("/healthz?verbose"), "")).Should(HaveField("Body",
			And(ContainSubstring("leader-election ok"), ContainSubstring("informer-sync ok"))))

		By("answering /healthz, /livez and /readyz without credentials")
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			Expect(scrape(port.Client, port.URL(path), "")()).To(HaveField("Status", http.StatusOK), path)
		}
		By("answering each check by name only to callers allowed, as --authorization-always-allow-paths says")
		Expect(scrape(port.Client, port.URL("/readyz/informer-sync"), "")()).To(HaveField("Status", http.StatusForbidden))

		By("a ServiceAccount bound to a role that may get /metrics, and one bound to nothing")
		reader := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "serving-reader-" + id},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		Expect(k8s.Create(ctx, reader)).To(Succeed())
		DeferCleanup(k8s.Delete, ctx, reader)
		scraper := token("serving-scraper-" + id)
		stranger := token("serving-stranger-" + id)
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "serving-scraper-" + id},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "serving-scraper-" + id, Namespace: metav1.NamespaceDefault}},
		}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(k8s.Delete, ctx, binding)

		metrics := port.URL("/metrics")
		By("refusing /metrics to an anonymous caller, a token the apiserver rejects, and a caller it does not allow")
		Expect(scrape(port.Client, metrics, "")()).To(HaveField("Status", http.StatusForbidden))
		Expect(scrape(port.Client, metrics, "not-a-token")()).To(HaveField("Status", http.StatusUnauthorized))
		Expect(scrape(port.Client, metrics, stranger)()).To(HaveField("Status", http.StatusForbidden))

		By("serving /metrics to a caller bound to the reader role, with the build and the checks' outcomes")
		Eventually(scrape(port.Client, metrics, scraper)).Should(And(
			HaveField("Status", http.StatusOK),
			HaveField("Body", ContainSubstring("node_lifecycle_partition_freeze")),
			HaveField("Body", MatchRegexp(`node_lifecycle_build_info\{client_go_version="v0\.[^"]+",go_version="go[^"]+",revision="[^"]*",version="[^"]+"\} 1`)),
			HaveField("Body", ContainSubstring(`node_lifecycle_healthcheck{name="informer-sync",type="readyz"} 1`)),
		))

		By("serving /metrics to a client certificate the apiserver's client CA signed, in system:masters")
		admin, err := testEnv.AddUser(envtest.User{Name: "serving-admin-" + id, Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		// The port trusts the client CA once it has read kube-system's
		// ConfigMap extension-apiserver-authentication, shortly after the
		// start, which /readyz does not wait for: until then a client
		// certificate is not asked for, and its caller is anonymous.
		Eventually(scrape(certClient(admin), metrics, "")).Should(And(
			HaveField("Status", http.StatusOK),
			HaveField("Body", ContainSubstring("node_lifecycle_partition_freeze")),
		))

		for _, path := range []string{"/readyz/informer-sync", "/livez/leader-election"} {
			Expect(scrape(certClient(admin), port.URL(path), "")()).To(HaveField("Status", http.StatusOK), path)
		}
		Expect(scrape(certClient(admin), port.URL("/livez/no-such-check"), "")()).To(HaveField("Status", http.StatusNotFound))

		By("refusing plain HTTP")
		Expect(scrape(http.DefaultClient, "http://"+port.Addr+"/healthz", "")()).
			NotTo(HaveField("Status", http.StatusOK))
	})

	It("refuses to start on a port another process holds", func() {
		id := rand.String(5)
		port, err := harness.NewSecurePort()
		Expect(err).NotTo(HaveOccurred())
		startControllerProcessAt(testEnv, GinkgoWriter, port, "serving-first-"+id, "serving-first-"+id)
		out := gbytes.NewBuffer()
		second, err := harness.StartProcess(controllerBinary(), append([]string{
			"--kubeconfig=" + writeKubeconfig("serving-second-"+id), "--leader-elect=false",
		}, port.Flags()...), out)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = second.Stop(10 * time.Second) })
		Eventually(second.Exited(), time.Minute).Should(BeClosed())
		Expect(string(out.Contents())).To(ContainSubstring("address already in use"))
	})
})

// certClient returns a client that presents u's client certificate.
func certClient(u *envtest.AuthenticatedUser) *http.Client {
	GinkgoHelper()
	c, err := harness.CertClient(u)
	Expect(err).NotTo(HaveOccurred())
	return c
}
