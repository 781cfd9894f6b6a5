package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// marksLevel is the priority level the installers give the requests a mark
// is made of.
const marksLevel = "node-lifecycle-marks"

// TestFlowSchemasMatchTheControllersIdentity checks that every installer's
// flow schemas match the identity its controller runs as, and that identity
// alone: the installer's ServiceAccount, the chart's in the release's
// namespace, the static pods' User.
func TestFlowSchemasMatchTheControllersIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs []*unstructured.Unstructured
		want flowcontrolv1.Subject
	}{{
		name: "config/default",
		objs: render(t, "config/default"),
	}, {
		name: "the chart, in a namespace of its own",
		objs: renderChart(t, "ops"),
	}, {
		name: staticPodRBAC,
		objs: render(t, staticPodRBAC),
		want: flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: controllerUser}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want.Kind == "" {
				sa := one(t, tc.objs, "ServiceAccount")
				want = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{
					Namespace: sa.GetNamespace(), Name: sa.GetName(),
				}}
			}
			schemas := find(tc.objs, "FlowSchema")
			if len(schemas) != 2 {
				t.Fatalf("%d FlowSchemas rendered, want 2: the marks' and the rest's", len(schemas))
			}
			levels := map[string]bool{}
			for _, u := range find(tc.objs, "PriorityLevelConfiguration") {
				levels[u.GetName()] = true
			}
			for _, u := range schemas {
				fs := convert[flowcontrolv1.FlowSchema](t, u)
				for _, rule := range fs.Spec.Rules {
					if len(rule.Subjects) != 1 || fmt.Sprint(rule.Subjects[0]) != fmt.Sprint(want) {
						t.Errorf("FlowSchema %s matches %v, want %v alone", fs.Name, subjectsOf(rule.Subjects), subjectsOf([]flowcontrolv1.Subject{want}))
					}
				}
				if pl := fs.Spec.PriorityLevelConfiguration.Name; pl != "workload-low" && !levels[pl] {
					t.Errorf("FlowSchema %s sends its requests to priority level %s, which is neither rendered nor workload-low", fs.Name, pl)
				}
			}
		})
	}
}

// subjectsOf prints subjects for a failure message.
func subjectsOf(subjects []flowcontrolv1.Subject) []string {
	var out []string
	for _, s := range subjects {
		switch {
		case s.ServiceAccount != nil:
			out = append(out, "ServiceAccount "+s.ServiceAccount.Namespace+"/"+s.ServiceAccount.Name)
		case s.User != nil:
			out = append(out, "User "+s.User.Name)
		case s.Group != nil:
			out = append(out, "Group "+s.Group.Name)
		}
	}
	return out
}

// TestFlowSchemasSendTheMarksToTheirOwnLevel applies each installer to an
// apiserver and asks it, by the priority level it answers a request in
// (priority and fairness names the flow schema and the level in its
// answer's headers), where the controller's requests go: reading a Node and
// a node's Lease and writing a Node's status to the marks' level, listing
// pods to workload-low; and that another identity's requests are matched by
// neither of the installer's schemas.
func TestFlowSchemasSendTheMarksToTheirOwnLevel(t *testing.T) {
	t.Run("config/default, as the ServiceAccount", func(t *testing.T) {
		env, c, objs := applyInstaller(t, "config/default")
		sa := convert[corev1.ServiceAccount](t, one(t, objs, "ServiceAccount"))
		controller := tokenClient(t, env, serviceAccountToken(t, c, sa))
		stranger := tokenClient(t, env, newServiceAccountToken(t, c, sa.Namespace, "stranger"))
		checkLevels(t, env, c, controller, stranger)
	})
	t.Run(staticPodRBAC+", as the User", func(t *testing.T) {
		env, c, _ := startAPIServer(t)
		lease := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
		if err := c.Create(t.Context(), lease); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Create namespace %s: %v", lease.Name, err)
		}
		for _, obj := range render(t, staticPodRBAC) {
			if err := c.Create(t.Context(), obj, strict); err != nil {
				t.Fatalf("Create %s: %v", describe(obj), err)
			}
		}
		controller := certUserClient(t, env, envtest.User{Name: controllerUser})
		stranger := certUserClient(t, env, envtest.User{Name: "system:stranger"})
		checkLevels(t, env, c, controller, stranger)
	})
}

// checkLevels creates a Node and its Lease and checks, with the admin's
// client c, that the apiserver of env answers controller's requests for a
// mark by the flow schema and in the priority level node-lifecycle-marks,
// and its list of pods by the flow schema node-lifecycle-controller in
// workload-low; and stranger's by neither schema.
func checkLevels(t *testing.T, env *envtest.Environment, c client.Client, controller, stranger *http.Client) {
	t.Helper()
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease}}
	for _, obj := range []client.Object{node, lease} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("Create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	// The UIDs the apiserver names in its answers, by the objects' names.
	names := map[string]string{}
	var schemas flowcontrolv1.FlowSchemaList
	var levels flowcontrolv1.PriorityLevelConfigurationList
	if err := c.List(ctx, &schemas); err != nil {
		t.Fatalf("List FlowSchemas: %v", err)
	}
	if err := c.List(ctx, &levels); err != nil {
		t.Fatalf("List PriorityLevelConfigurations: %v", err)
	}
	for _, fs := range schemas.Items {
		names[string(fs.UID)] = "FlowSchema " + fs.Name
	}
	for _, pl := range levels.Items {
		names[string(pl.UID)] = "PriorityLevelConfiguration " + pl.Name
	}

	host := strings.TrimSuffix(env.Config.Host, "/")
	statusPatch := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}}`
	const (
		marksSchema = "FlowSchema " + marksLevel
		restSchema  = "FlowSchema node-lifecycle-controller"
	)
	for _, r := range []struct {
		who                   string
		hc                    *http.Client
		method, path, body    string
		wantSchema, wantLevel string
	}{
		{"the controller", controller, http.MethodGet, "/api/v1/nodes/n1", "", marksSchema, "PriorityLevelConfiguration " + marksLevel},
		{"the controller", controller, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "", marksSchema, "PriorityLevelConfiguration " + marksLevel},
		{"the controller", controller, http.MethodPatch, "/api/v1/nodes/n1/status", statusPatch, marksSchema, "PriorityLevelConfiguration " + marksLevel},
		{"the controller", controller, http.MethodGet, "/api/v1/pods?limit=1", "", restSchema, "PriorityLevelConfiguration workload-low"},
		{"a stranger", stranger, http.MethodGet, "/api/v1/nodes/n1", "", "", ""},
	} {
		// The apiserver takes a moment to take in new flow schemas.
		poll(t, 30*time.Second, func() error {
			a, err := classify(ctx, r.hc, r.method, host+r.path, r.body)
			if err != nil {
				return err
			}
			schema, level := names[a.schemaUID], names[a.levelUID]
			switch {
			case r.wantSchema == "" && (schema == marksSchema || schema == restSchema):
				return fmt.Errorf("%s %s by %s answered %d by the controller's %s", r.method, r.path, r.who, a.status, schema)
			case r.wantSchema != "" && (schema != r.wantSchema || level != r.wantLevel):
				return fmt.Errorf("%s %s by %s answered %d by %q in %q, want %s in %s", r.method, r.path, r.who, a.status, schema, level, r.wantSchema, r.wantLevel)
			case r.wantSchema != "" && a.status >= 300:
				return fmt.Errorf("%s %s by %s answered %d", r.method, r.path, r.who, a.status)
			}
			return nil
		})
	}
}

// classification is where priority and fairness served a request, as its
// answer's headers name them, and the answer's status.
type classification struct {
	schemaUID, levelUID string
	status              int
}

// classify sends a request and returns where the apiserver served it.
func classify(ctx context.Context, hc *http.Client, method, url, body string) (classification, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return classification{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return classification{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	return classification{
		schemaUID: resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
		levelUID:  resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID),
		status:    resp.StatusCode,
	}, nil
}

// tokenClient returns an HTTP client of the apiserver of env that presents
// the bearer token.
func tokenClient(t *testing.T, env *envtest.Environment, token string) *http.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("HTTP client with a token: %v", err)
	}
	return hc
}

// certUserClient adds user to the apiserver of env with a client
// certificate and returns an HTTP client that presents it.
func certUserClient(t *testing.T, env *envtest.Environment, user envtest.User) *http.Client {
	t.Helper()
	u, err := env.AddUser(user, nil)
	if err != nil {
		t.Fatalf("Add user %s: %v", user.Name, err)
	}
	hc, err := rest.HTTPClientFor(u.Config())
	if err != nil {
		t.Fatalf("HTTP client of %s: %v", user.Name, err)
	}
	return hc
}
