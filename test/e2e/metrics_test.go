package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

var _ = Describe("Metrics", func() {
	It("serves /metrics over HTTPS only to callers allowed to get it, and over HTTP when asked", func() {
		ctx := context.Background()
		id := rand.String(5)
		secureAddr, err := harness.FreeLocalAddr()
		Expect(err).NotTo(HaveOccurred())
		startControllerProcess("metrics-"+id, "metrics-"+id, "--metrics-bind-address="+secureAddr)

		By("a ServiceAccount bound to a role like the installer's metrics-reader, and one bound to nothing")
		reader := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + id},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		Expect(k8s.Create(ctx, reader)).To(Succeed())
		DeferCleanup(k8s.Delete, ctx, reader)
		scraper := token("scraper-" + id)
		stranger := token("stranger-" + id)
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "scraper-" + id},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper-" + id, Namespace: metav1.NamespaceDefault}},
		}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(k8s.Delete, ctx, binding)

		// The certificate is self-signed, made by the process at start.
		insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a self-signed certificate on loopback
		}}
		url := "https://" + secureAddr + "/metrics"
		By("refusing a caller without a token, one with a token the apiserver rejects, and one it does not allow")
		Eventually(scrape(insecure, url, "")).Should(HaveField("Status", http.StatusUnauthorized))
		// controller-runtime's filter answers a rejected token with 500,
		// having logged the TokenReview's reason.
		Expect(scrape(insecure, url, "not-a-token")()).To(HaveField("Status", BeNumerically(">=", 400)))
		Expect(scrape(insecure, url, stranger)()).To(HaveField("Status", http.StatusForbidden))
		By("serving a caller bound to the metrics reader role")
		Eventually(scrape(insecure, url, scraper)).Should(And(
			HaveField("Status", http.StatusOK),
			HaveField("Body", ContainSubstring("node_lifecycle_partition_freeze")),
		))
		By("refusing plain HTTP on the secure port")
		Expect(scrape(http.DefaultClient, "http://"+secureAddr+"/metrics", scraper)()).
			NotTo(HaveField("Status", http.StatusOK))

		By("serving plain HTTP to anyone with --metrics-secure=false, and the health checks on --health-probe-bind-address")
		plainAddr, err := harness.FreeLocalAddr()
		Expect(err).NotTo(HaveOccurred())
		probeAddr, err := harness.FreeLocalAddr()
		Expect(err).NotTo(HaveOccurred())
		startControllerProcess("metrics-plain-"+id, "metrics-plain-"+id,
			"--metrics-bind-address="+plainAddr, "--metrics-secure=false", "--health-probe-bind-address="+probeAddr)
		Eventually(scrape(http.DefaultClient, "http://"+plainAddr+"/metrics", "")).Should(And(
			HaveField("Status", http.StatusOK),
			HaveField("Body", ContainSubstring("node_lifecycle_partition_freeze")),
		))
		// The same checks as the secure port's, by name too, once the
		// caches the process starts on taking the Lease have synced.
		Eventually(leaderLease("metrics-plain-" + id)).Should(HaveField("HolderIdentity", Not(BeNil())))
		for _, path := range []string{"/healthz/leader-election", "/readyz/informer-sync", "/readyz/leader-election"} {
			Eventually(scrape(http.DefaultClient, "http://"+probeAddr+path, "")).Should(HaveField("Status", http.StatusOK), path)
		}
	})
})

// scraped is what a scrape of /metrics got.
type scraped struct {
	Status int
	Body   string
}

// scrape gets url with bearer as the token, if any. A request that fails
// before an answer returns status 0.
func scrape(c *http.Client, url, bearer string) func() scraped {
	return func() scraped {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			return scraped{}
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return scraped{}
		}
		return scraped{Status: resp.StatusCode, Body: string(body)}
	}
}

// token creates a ServiceAccount in the default namespace and returns a
// token the apiserver issued for it.
func token(name string) string {
	GinkgoHelper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault}}
	Expect(k8s.Create(ctx, sa)).To(Succeed())
	DeferCleanup(k8s.Delete, ctx, sa)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	Expect(k8s.SubResource("token").Create(ctx, sa, req)).To(Succeed())
	Expect(strings.TrimSpace(req.Status.Token)).NotTo(BeEmpty())
	return req.Status.Token
}
