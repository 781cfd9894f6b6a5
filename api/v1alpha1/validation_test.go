package v1alpha1_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

const (
	crdDir     = "../../config/crd/bases"
	samplesDir = "../../config/samples"
	crdName    = "nodehealthpolicies.health.nodelifecycle.io"
)

// k8s talks to the kube-apiserver that TestMain starts with the CRD installed.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets, err := testenv.AssetsDir("make test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr)))

	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
	}
	// No pods here, but the control plane is configured as the e2e suite's.
	testenv.WithoutServiceAccounts(env)
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest with the CRDs of %s: %v\n", crdDir, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "build client: %v\n", err)
		return 1
	}
	return m.Run()
}

// TestValidation creates a policy per case: each rule of the CRD rejects
// what it should, with its own message on its own field, and lets the
// boundary values through.
func TestValidation(t *testing.T) {
	dur := func(s string) *metav1.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("parse duration %q: %v", s, err)
		}
		return &metav1.Duration{Duration: d}
	}
	intOrString := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	selector := func(reqs ...metav1.LabelSelectorRequirement) metav1.LabelSelector {
		return metav1.LabelSelector{MatchExpressions: reqs}
	}

	const (
		msgPodEvictionVsMonitor = "podEvictionTimeout must be greater than nodeMonitorGracePeriod"
		msgStartupVsMonitor     = "nodeStartupGracePeriod must be at least nodeMonitorGracePeriod"
		msgMaxUnhealthy         = "maxUnhealthy must be a number of nodes at least 0 or a percentage from 0% to 100%"
		msgOperator             = "nodeSelector: a matchExpressions operator must be In, NotIn, Exists or DoesNotExist"
		msgValues               = "nodeSelector: In and NotIn need values, Exists and DoesNotExist take none"
		msgMatchLabels          = "nodeSelector: matchLabels keys must be at most 317 characters and values at most 63"
		msgNotNegative          = "should be greater than or equal to 0"
	)

	tests := []struct {
		name string
		spec v1alpha1.NodeHealthPolicySpec
		// field and message are those of the cause the apiserver must
		// report; both empty when the policy is valid.
		field, message string
	}{
		{name: "empty spec selects every node"},
		{
			name: "full valid spec",
			spec: v1alpha1.NodeHealthPolicySpec{
				NodeSelector: metav1.LabelSelector{
					MatchLabels: map[string]string{"node.kubernetes.io/pool": "general", "tier": ""},
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "topology.kubernetes.io/zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
						{Key: "example.com/skip", Operator: metav1.LabelSelectorOpDoesNotExist},
					},
				},
				NodeMonitorGracePeriod:    dur("40s"),
				NodeStartupGracePeriod:    dur("1m"),
				PodEvictionTimeout:        dur("5m"),
				MaintenanceGracePeriod:    dur("2h"),
				NodeEvictionRate:          ptr.To(0.1),
				SecondaryNodeEvictionRate: ptr.To(0.01),
				UnhealthyZoneThreshold:    ptr.To(0.55),
				LargeClusterSizeThreshold: ptr.To[int32](50),
				FullDisruption:            v1alpha1.FullDisruptionHalt,
				MaxUnhealthy:              intOrString(intstr.FromString("40%")),
				PauseRequests:             []string{"maintenance"},
			},
		},

		{name: "nodeMonitorGracePeriod 0s", spec: v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("0s")},
			field: "spec.nodeMonitorGracePeriod", message: "nodeMonitorGracePeriod must be positive"},
		{name: "nodeMonitorGracePeriod -1s", spec: v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("-1s")},
			field: "spec.nodeMonitorGracePeriod", message: "nodeMonitorGracePeriod must be positive"},
		{name: "nodeStartupGracePeriod 0s", spec: v1alpha1.NodeHealthPolicySpec{NodeStartupGracePeriod: dur("0s")},
			field: "spec.nodeStartupGracePeriod", message: "nodeStartupGracePeriod must be positive"},
		{name: "nodeStartupGracePeriod -1s", spec: v1alpha1.NodeHealthPolicySpec{NodeStartupGracePeriod: dur("-1s")},
			field: "spec.nodeStartupGracePeriod", message: "nodeStartupGracePeriod must be positive"},
		{name: "podEvictionTimeout 0s", spec: v1alpha1.NodeHealthPolicySpec{PodEvictionTimeout: dur("0s")},
			field: "spec.podEvictionTimeout", message: "podEvictionTimeout must be positive"},
		{name: "podEvictionTimeout -1s", spec: v1alpha1.NodeHealthPolicySpec{PodEvictionTimeout: dur("-1s")},
			field: "spec.podEvictionTimeout", message: "podEvictionTimeout must be positive"},
		{name: "maintenanceGracePeriod -1s", spec: v1alpha1.NodeHealthPolicySpec{MaintenanceGracePeriod: dur("-1s")},
			field: "spec.maintenanceGracePeriod", message: "maintenanceGracePeriod must not be negative"},
		{name: "maintenanceGracePeriod 0s turns the hold off", spec: v1alpha1.NodeHealthPolicySpec{MaintenanceGracePeriod: dur("0s")}},

		{name: "podEvictionTimeout below nodeMonitorGracePeriod",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("1m"), PodEvictionTimeout: dur("30s")},
			field: "spec", message: msgPodEvictionVsMonitor},
		{name: "podEvictionTimeout equal to nodeMonitorGracePeriod",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("1m"), PodEvictionTimeout: dur("60s")},
			field: "spec", message: msgPodEvictionVsMonitor},
		{name: "podEvictionTimeout just above nodeMonitorGracePeriod",
			spec: v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("1m"), PodEvictionTimeout: dur("1m0.001s")}},
		{name: "nodeStartupGracePeriod below nodeMonitorGracePeriod",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("40s"), NodeStartupGracePeriod: dur("30s")},
			field: "spec", message: msgStartupVsMonitor},
		{name: "nodeStartupGracePeriod equal to nodeMonitorGracePeriod",
			spec: v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: dur("40s"), NodeStartupGracePeriod: dur("40s")}},

		{name: "negative nodeEvictionRate", spec: v1alpha1.NodeHealthPolicySpec{NodeEvictionRate: ptr.To(-0.1)},
			field: "spec.nodeEvictionRate", message: msgNotNegative},
		{name: "zero nodeEvictionRate", spec: v1alpha1.NodeHealthPolicySpec{NodeEvictionRate: ptr.To(0.0)}},
		{name: "negative secondaryNodeEvictionRate", spec: v1alpha1.NodeHealthPolicySpec{SecondaryNodeEvictionRate: ptr.To(-1.0)},
			field: "spec.secondaryNodeEvictionRate", message: msgNotNegative},
		{name: "zero secondaryNodeEvictionRate", spec: v1alpha1.NodeHealthPolicySpec{SecondaryNodeEvictionRate: ptr.To(0.0)}},

		{name: "unhealthyZoneThreshold 0", spec: v1alpha1.NodeHealthPolicySpec{UnhealthyZoneThreshold: ptr.To(0.0)},
			field: "spec.unhealthyZoneThreshold", message: "should be greater than 0"},
		{name: "unhealthyZoneThreshold 1.5", spec: v1alpha1.NodeHealthPolicySpec{UnhealthyZoneThreshold: ptr.To(1.5)},
			field: "spec.unhealthyZoneThreshold", message: "should be less than or equal to 1"},
		{name: "unhealthyZoneThreshold 1", spec: v1alpha1.NodeHealthPolicySpec{UnhealthyZoneThreshold: ptr.To(1.0)}},

		{name: "negative largeClusterSizeThreshold", spec: v1alpha1.NodeHealthPolicySpec{LargeClusterSizeThreshold: ptr.To[int32](-1)},
			field: "spec.largeClusterSizeThreshold", message: msgNotNegative},
		{name: "zero largeClusterSizeThreshold", spec: v1alpha1.NodeHealthPolicySpec{LargeClusterSizeThreshold: ptr.To[int32](0)}},

		{name: "fullDisruption not in the enum", spec: v1alpha1.NodeHealthPolicySpec{FullDisruption: "Ignore"},
			field: "spec.fullDisruption", message: `supported values: "Evict", "Halt"`},
		{name: "fullDisruption Evict", spec: v1alpha1.NodeHealthPolicySpec{FullDisruption: v1alpha1.FullDisruptionEvict}},

		{name: "maxUnhealthy -1", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromInt32(-1))},
			field: "spec.maxUnhealthy", message: msgMaxUnhealthy},
		{name: "maxUnhealthy 150%", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("150%"))},
			field: "spec.maxUnhealthy", message: msgMaxUnhealthy},
		{name: "maxUnhealthy abc", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("abc"))},
			field: "spec.maxUnhealthy", message: msgMaxUnhealthy},
		{name: "maxUnhealthy a number as a string", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("3"))},
			field: "spec.maxUnhealthy", message: msgMaxUnhealthy},
		{name: "maxUnhealthy 050%", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("050%"))},
			field: "spec.maxUnhealthy", message: msgMaxUnhealthy},
		{name: "maxUnhealthy 3", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromInt32(3))}},
		{name: "maxUnhealthy 0", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromInt32(0))}},
		{name: "maxUnhealthy 0%", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("0%"))}},
		{name: "maxUnhealthy 50%", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("50%"))}},
		{name: "maxUnhealthy 100%", spec: v1alpha1.NodeHealthPolicySpec{MaxUnhealthy: intOrString(intstr.FromString("100%"))}},

		{name: "nodeSelector bad operator",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeSelector: selector(metav1.LabelSelectorRequirement{Key: "pool", Operator: "Equals"})},
			field: "spec.nodeSelector", message: msgOperator},
		{name: "nodeSelector In without values",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeSelector: selector(metav1.LabelSelectorRequirement{Key: "pool", Operator: metav1.LabelSelectorOpIn})},
			field: "spec.nodeSelector", message: msgValues},
		{name: "nodeSelector NotIn with empty values",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeSelector: selector(metav1.LabelSelectorRequirement{Key: "pool", Operator: metav1.LabelSelectorOpNotIn, Values: []string{}})},
			field: "spec.nodeSelector", message: msgValues},
		{name: "nodeSelector Exists with values",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeSelector: selector(metav1.LabelSelectorRequirement{Key: "pool", Operator: metav1.LabelSelectorOpExists, Values: []string{"gpu"}})},
			field: "spec.nodeSelector", message: msgValues},
		{name: "nodeSelector Exists",
			spec: v1alpha1.NodeHealthPolicySpec{NodeSelector: selector(metav1.LabelSelectorRequirement{Key: "node-role.example.com/edge", Operator: metav1.LabelSelectorOpExists})}},
		{name: "nodeSelector NotIn with values",
			spec: v1alpha1.NodeHealthPolicySpec{NodeSelector: selector(metav1.LabelSelectorRequirement{Key: "pool", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"gpu"}})}},
		// Only the lengths of matchLabels are checked: a regular expression
		// over the keys and values of a map that has no maxProperties, in a
		// type this module does not own, exceeds the apiserver's CEL cost
		// budget. The controller reports any other bad selector in the
		// policy's status.
		{name: "nodeSelector matchLabels key too long",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{strings.Repeat("a", 254) + "/" + strings.Repeat("b", 63): "x"}}},
			field: "spec.nodeSelector", message: msgMatchLabels},
		{name: "nodeSelector matchLabels key of 317 characters",
			spec: v1alpha1.NodeHealthPolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{strings.Repeat("a", 253) + "/" + strings.Repeat("b", 63): "x"}}}},
		{name: "nodeSelector matchLabels value too long",
			spec:  v1alpha1.NodeHealthPolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": strings.Repeat("a", 64)}}},
			field: "spec.nodeSelector", message: msgMatchLabels},
		{name: "nodeSelector matchLabels value of 63 characters",
			spec: v1alpha1.NodeHealthPolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": strings.Repeat("a", 63)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &v1alpha1.NodeHealthPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: objectName(t)},
				Spec:       tt.spec,
			}
			err := k8s.Create(t.Context(), policy)
			if tt.message == "" {
				if err != nil {
					t.Fatalf("create: %v, want the policy accepted", err)
				}
				deleteOnCleanup(t, policy)
				return
			}
			if err == nil {
				deleteOnCleanup(t, policy)
			}
			assertInvalid(t, err, tt.field, tt.message)
		})
	}
}

// TestValidationOfRawValues sends what a typed client cannot: values the
// controller could not decode into a metav1.Duration or an IntOrString
// must not reach its cache.
func TestValidationOfRawValues(t *testing.T) {
	tests := []struct {
		name           string
		spec           map[string]any
		field, message string
	}{
		{name: "nodeMonitorGracePeriod not a duration", spec: map[string]any{"nodeMonitorGracePeriod": "forty seconds"},
			field: "spec.nodeMonitorGracePeriod", message: "nodeMonitorGracePeriod must be positive"},
		{name: "podEvictionTimeout in days", spec: map[string]any{"podEvictionTimeout": "1d"},
			field: "spec.podEvictionTimeout", message: "podEvictionTimeout must be positive"},
		{name: "maxUnhealthy a fraction", spec: map[string]any{"maxUnhealthy": 0.5},
			field: "spec.maxUnhealthy", message: "must be of type integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := newUnstructuredPolicy(objectName(t))
			policy.Object["spec"] = tt.spec
			err := k8s.Create(t.Context(), policy, client.FieldValidation(metav1.FieldValidationStrict))
			if err == nil {
				deleteOnCleanup(t, policy)
			}
			assertInvalid(t, err, tt.field, tt.message)
		})
	}
}

// TestCRDAsServed reads the CustomResourceDefinition back from the
// apiserver: kubectl get shows the printer columns, and status is a
// subresource, so that the controller's status writes cannot change the
// spec and users' spec writes cannot change the status.
func TestCRDAsServed(t *testing.T) {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatalf("get CRD %s: %v", crdName, err)
	}
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil || len(versions) != 1 {
		t.Fatalf("spec.versions = %v (%v), want just v1alpha1", versions, err)
	}
	version, _ := versions[0].(map[string]any)
	if name, _, _ := unstructured.NestedString(version, "name"); name != v1alpha1.GroupVersion.Version {
		t.Fatalf("served version %q, want %q", name, v1alpha1.GroupVersion.Version)
	}
	columns, _, err := unstructured.NestedSlice(version, "additionalPrinterColumns")
	if err != nil {
		t.Fatalf("read additionalPrinterColumns: %v", err)
	}
	var names []string
	for _, c := range columns {
		name, _, _ := unstructured.NestedString(c.(map[string]any), "name")
		names = append(names, name)
	}
	if want := []string{"Nodes", "Healthy", "Unhealthy", "Eviction Allowed", "Age"}; !slices.Equal(names, want) {
		t.Errorf("printer columns %q, want %q", names, want)
	}
	if _, found, _ := unstructured.NestedMap(version, "subresources", "status"); !found {
		t.Errorf("the status subresource is not enabled: subresources = %v", version["subresources"])
	}

	// And the subresource does what it is for.
	policy := &v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: "status-subresource"}}
	if err := k8s.Create(t.Context(), policy); err != nil {
		t.Fatalf("create: %v", err)
	}
	deleteOnCleanup(t, policy)
	policy.Status.Nodes = 3
	if err := k8s.Status().Update(t.Context(), policy); err != nil {
		t.Fatalf("update status: %v", err)
	}
	policy.Status.Nodes = 7
	policy.Spec.PauseRequests = []string{"maintenance"}
	if err := k8s.Update(t.Context(), policy); err != nil {
		t.Fatalf("update: %v", err)
	}
	got := &v1alpha1.NodeHealthPolicy{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(policy), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Status.Nodes != 3 || len(got.Spec.PauseRequests) != 1 {
		t.Errorf("status.nodes = %d, spec.pauseRequests = %q after a status write of 3 and a main write of 7 and [maintenance]; want 3 and [maintenance]",
			got.Status.Nodes, got.Spec.PauseRequests)
	}
}

// TestSamples creates every sample policy on the apiserver (dry run, strict
// field validation), so that a sample that drifts from the API fails the
// tests, and checks that config/samples/kustomization.yaml lists them all.
func TestSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		t.Fatalf("list samples: %v", err)
	}
	var samples []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			samples = append(samples, base)
		}
	}
	if len(samples) == 0 {
		t.Fatalf("no samples in %s", samplesDir)
	}

	var kustomization struct {
		Resources []string `json:"resources"`
	}
	readYAML(t, filepath.Join(samplesDir, "kustomization.yaml"), &kustomization)
	if listed := slices.Sorted(slices.Values(kustomization.Resources)); !slices.Equal(listed, samples) {
		t.Errorf("kustomization.yaml lists %q, want the samples %q", listed, samples)
	}

	for _, sample := range samples {
		t.Run(sample, func(t *testing.T) {
			policy := &unstructured.Unstructured{}
			readYAML(t, filepath.Join(samplesDir, sample), &policy.Object)
			if gvk := policy.GroupVersionKind(); gvk != v1alpha1.GroupVersion.WithKind("NodeHealthPolicy") {
				t.Fatalf("sample is a %v, want a NodeHealthPolicy of %v", gvk, v1alpha1.GroupVersion)
			}
			want := strings.TrimSuffix(strings.TrimPrefix(sample, "health_v1alpha1_nodehealthpolicy_"), ".yaml")
			if policy.GetName() != want {
				t.Errorf("sample is named %q, want %q after its file", policy.GetName(), want)
			}
			if err := k8s.Create(t.Context(), policy, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("create (dry run): %v", err)
			}
			// What the apiserver accepted, the controller must be able to read.
			var typed v1alpha1.NodeHealthPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(policy.Object, &typed); err != nil {
				t.Fatalf("decode the created sample as a NodeHealthPolicy: %v", err)
			}
		})
	}
}

// assertInvalid fails the test unless err is an Invalid error from the
// apiserver with a cause on field that holds message, and no cause on any
// other field. Causes without a field (which the apiserver spells "<nil>")
// are let through: when a value breaks its type or enum, the apiserver
// skips every CEL rule of the object and says so in such a cause, and a
// value that matches no branch of an anyOf gets such causes too.
func assertInvalid(t *testing.T, err error, field, message string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create: %v, want an Invalid error with %q on %q", err, message, field)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("create: %v carries no causes", err)
	}
	causes := status.Status().Details.Causes
	found := false
	for _, c := range causes {
		switch {
		case c.Field == field && strings.Contains(c.Message, message):
			found = true
		case c.Field != "" && c.Field != "<nil>" && c.Field != field:
			t.Errorf("create: unexpected cause on %q: %s", c.Field, c.Message)
		}
	}
	if !found {
		t.Fatalf("create: causes %+v, want one on %q with %q", causes, field, message)
	}
	t.Logf("rejected as expected: %v", err)
}

// objectName turns the subtest's name into a unique object name.
func objectName(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	return strings.Trim(name, "-")
}

func newUnstructuredPolicy(name string) *unstructured.Unstructured {
	policy := &unstructured.Unstructured{Object: map[string]any{}}
	policy.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("NodeHealthPolicy"))
	policy.SetName(name)
	return policy
}

func deleteOnCleanup(t *testing.T, obj client.Object) {
	t.Helper()
	t.Cleanup(func() {
		// t.Context is canceled before cleanups run.
		if err := client.IgnoreNotFound(k8s.Delete(context.Background(), obj)); err != nil {
			t.Errorf("delete %s: %v", obj.GetName(), err)
		}
	})
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
}
