package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// servingCertShape is what config/certmanager wires together: the
// Certificate's Secret, where the Deployment mounts it, the files the
// controller serves from it, and how the ServiceMonitor verifies the port.
type servingCertShape struct {
	secret    string
	dnsNames  []string
	mountPath string
	certFile  string
	keyFile   string
	// serverName and caKey are the ServiceMonitor's tlsConfig: the name
	// Prometheus verifies the certificate for, and the key of the Secret
	// it takes the CA from.
	serverName string
	caKey      string
}

// servingCert checks that objs, an installer or the chart with cert-manager
// and the ServiceMonitor, wire the Certificate to the Deployment and the
// ServiceMonitor, and returns how.
func servingCert(t *testing.T, objs []*unstructured.Unstructured) servingCertShape {
	t.Helper()
	var s servingCertShape
	cert := one(t, objs, "Certificate")
	s.secret, _, _ = unstructured.NestedString(cert.Object, "spec", "secretName")
	s.dnsNames, _, _ = unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if !has(objs, "Issuer", issuer) {
		t.Errorf("Certificate %s is issued by Issuer %q, which is not rendered", cert.GetName(), issuer)
	}
	svc := convert[corev1.Service](t, one(t, objs, "Service"))
	host := svc.Name + "." + svc.Namespace + ".svc"
	if !slices.Contains(s.dnsNames, host) {
		t.Errorf("Certificate %s is for %q, not the metrics Service's DNS name %s", cert.GetName(), s.dnsNames, host)
	}

	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	vol := slices.IndexFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == s.secret
	})
	if vol < 0 {
		t.Fatalf("The Deployment mounts no volume of the Certificate's Secret %q", s.secret)
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	for _, m := range ctr.VolumeMounts {
		if m.Name == dep.Spec.Template.Spec.Volumes[vol].Name {
			s.mountPath = m.MountPath
		}
	}
	if s.mountPath == "" {
		t.Fatalf("The container mounts no volume %s", dep.Spec.Template.Spec.Volumes[vol].Name)
	}
	serving := parseFlags(t, ctr.Args).Serving.SecureServing.ServerCert.CertKey
	s.certFile, s.keyFile = serving.CertFile, serving.KeyFile
	for flag, want := range map[string]string{s.certFile: "tls.crt", s.keyFile: "tls.key"} {
		if flag != filepath.Join(s.mountPath, want) {
			t.Errorf("The controller serves %q, want the Secret's %s, mounted at %s", flag, want, s.mountPath)
		}
	}

	mon := one(t, objs, "ServiceMonitor")
	endpoints, _, _ := unstructured.NestedSlice(mon.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor has %d endpoints, want 1", len(endpoints))
	}
	e, _ := endpoints[0].(map[string]any)
	if skip, _, _ := unstructured.NestedBool(e, "tlsConfig", "insecureSkipVerify"); skip {
		t.Error("The ServiceMonitor skips TLS verification, with a certificate it can verify")
	}
	s.serverName, _, _ = unstructured.NestedString(e, "tlsConfig", "serverName")
	if !slices.Contains(s.dnsNames, s.serverName) {
		t.Errorf("The ServiceMonitor verifies the port for %q, not one of the Certificate's names %q", s.serverName, s.dnsNames)
	}
	caSecret, _, _ := unstructured.NestedString(e, "tlsConfig", "ca", "secret", "name")
	s.caKey, _, _ = unstructured.NestedString(e, "tlsConfig", "ca", "secret", "key")
	if caSecret != s.secret || s.caKey != "ca.crt" {
		t.Errorf("The ServiceMonitor trusts the CA in Secret %q key %q, want the Certificate's %q key ca.crt", caSecret, s.caKey, s.secret)
	}
	return s
}

func TestCertManagerWiresTheServingCertificate(t *testing.T) {
	installer := servingCert(t, renderWithCertManager(t))
	chart := servingCert(t, renderChart(t, "node-lifecycle-system", "prometheus.enable=true", "certManager.enable=true"))
	if fmt.Sprint(installer) != fmt.Sprint(chart) {
		t.Errorf("The chart wires the certificate as %+v, the installer as %+v", chart, installer)
	}
	// Without cert-manager the ServiceMonitor cannot verify the
	// controller's self-signed certificate, made at start.
	mon := one(t, renderWithPrometheus(t), "ServiceMonitor")
	endpoints, _, _ := unstructured.NestedSlice(mon.Object, "spec", "endpoints")
	for _, e := range endpoints {
		if skip, _, _ := unstructured.NestedBool(e.(map[string]any), "tlsConfig", "insecureSkipVerify"); !skip {
			t.Error("Without cert-manager, the ServiceMonitor verifies a certificate nothing signed")
		}
	}
}

// TestCertManagerCertificateIsServedVerifiedAndRenewed applies the installer
// with config/certmanager (but the cert-manager and Prometheus operator
// objects, whose CRDs the apiserver lacks), writes the Secret as
// cert-manager's self-signed Issuer would and lays it out as the kubelet
// mounts it, and runs the binary as a pod would. A client that verifies the
// port as the ServiceMonitor says gets the metrics; after cert-manager
// renews the certificate, with a new key, the controller serves the new
// one without a restart.
func TestCertManagerCertificateIsServedVerifiedAndRenewed(t *testing.T) {
	objs := renderWithCertManager(t)
	shape := servingCert(t, objs)
	if t.Failed() {
		return
	}
	inCluster := slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool {
		g := o.GroupVersionKind().Group
		return g == "cert-manager.io" || g == "monitoring.coreos.com"
	})
	env, c := applyObjects(t, inCluster)
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	scraper := newServiceAccountToken(t, c, dep.Namespace, "scraper")
	bindMetricsReader(t, c, "scraper", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: dep.Namespace})

	// The volume, as the kubelet writes a Secret's: each key a link
	// through ..data to a directory that a renewal replaces at once.
	mount := t.TempDir()
	first := issueSelfSigned(t, shape.dnsNames)
	writeSecretVolume(t, mount, first)
	local := func(path string) string { return filepath.Join(mount, strings.TrimPrefix(path, shape.mountPath)) }
	port := runAsInstalled(t, env, c, inCluster,
		"--tls-cert-file="+local(shape.certFile), "--tls-private-key-file="+local(shape.keyFile))

	metrics := port.URL("/metrics")
	waitForStatus(t, verifyingClient(t, first[shape.caKey], shape.serverName), metrics, scraper, http.StatusOK, "node_lifecycle_partition_freeze")
	// The verification can fail: another name, or another CA.
	if _, _, err := get(t.Context(), verifyingClient(t, first[shape.caKey], "elsewhere.example"), metrics, scraper); err == nil {
		t.Error("A client that verifies the port for another name got an answer")
	}

	renewed := issueSelfSigned(t, shape.dnsNames)
	writeSecretVolume(t, mount, renewed)
	waitForStatus(t, verifyingClient(t, renewed[shape.caKey], shape.serverName), metrics, scraper, http.StatusOK, "node_lifecycle_partition_freeze")
	if _, _, err := get(t.Context(), verifyingClient(t, first[shape.caKey], shape.serverName), metrics, scraper); err == nil {
		t.Error("The controller still serves the certificate cert-manager replaced")
	}
}

// issueSelfSigned returns the keys of a Secret that cert-manager's
// self-signed Issuer writes for a Certificate for dnsNames: the certificate,
// its key, and the certificate again as the CA that verifies it.
func issueSelfSigned(t *testing.T, dnsNames []string) map[string][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{},
		DNSNames:              dnsNames,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return map[string][]byte{
		corev1.TLSCertKey:       crt,
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"ca.crt":                crt,
	}
}

// writeSecretVolume writes data into dir as the kubelet does a Secret
// volume's: the keys in a new directory, then ..data switched to it in one
// rename, and the directory before it removed.
func writeSecretVolume(t *testing.T, dir string, data map[string][]byte) {
	t.Helper()
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	ts, err := os.MkdirTemp(dir, "..ts-")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(ts, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyingClient returns a client that trusts only the CA in caPEM and
// verifies the server's certificate for serverName, as Prometheus does with
// a ServiceMonitor's tlsConfig.
func verifyingClient(t *testing.T, caPEM []byte, serverName string) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("No certificate in the CA")
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
}
