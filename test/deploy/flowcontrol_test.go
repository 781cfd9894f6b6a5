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
				if pl := fs.Spec.PriorityLevelConfiguration.Name; pl != "workload-high" && !levels[pl] {
					t.Errorf("FlowSchema %s sends its requests to priority level %s, which is neither rendered nor workload-high", fs.Name, pl)
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
// (priority and fairness names it in a response header), where the
// controller's requests go: reading a Node and a node's Lease and writing a
// Node's status to the marks' level, listing pods to workload-high; and
// another ServiceAccount's to neither.
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
// mark in the marks' level and its list of pods in workload-high, and
// stranger's in neither.
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
	levelUID := func(name string) string {
		var pl flowcontrolv1.PriorityLevelConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &pl); err != nil {
			t.Fatalf("Get PriorityLevelConfiguration %s: %v", name, err)
		}
		return string(pl.UID)
	}
	marks, workloadHigh := levelUID(marksLevel), levelUID("workload-high")

	host := strings.TrimSuffix(env.Config.Host, "/")
	statusPatch := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}}`
	for _, r := range []struct {
		who             string
		hc              *http.Client
		method, path    string
		body, wantLevel string
		levelName       string
	}{
		{"the controller", controller, http.MethodGet, "/api/v1/nodes/n1", "", marks, marksLevel},
		{"the controller", controller, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "", marks, marksLevel},
		{"the controller", controller, http.MethodPatch, "/api/v1/nodes/n1/status", statusPatch, marks, marksLevel},
		{"the controller", controller, http.MethodGet, "/api/v1/pods?limit=1", "", workloadHigh, "workload-high"},
		{"a stranger", stranger, http.MethodGet, "/api/v1/nodes/n1", "", "", ""},
	} {
		// The apiserver takes a moment to take in new flow schemas.
		poll(t, 30*time.Second, func() error {
			got, status, err := priorityLevelOf(ctx, r.hc, r.method, host+r.path, r.body)
			if err != nil {
				return err
			}
			switch {
			case r.wantLevel == "" && (got == marks || got == workloadHigh):
				return fmt.Errorf("%s %s by %s answered %d in the controller's level %s", r.method, r.path, r.who, status, got)
			case r.wantLevel != "" && got != r.wantLevel:
				return fmt.Errorf("%s %s by %s answered %d in priority level %q, want %s (%s)", r.method, r.path, r.who, status, got, r.levelName, r.wantLevel)
			case r.wantLevel != "" && status >= 300:
				return fmt.Errorf("%s %s by %s answered %d", r.method, r.path, r.who, status)
			}
			return nil
		})
	}
}

// priorityLevelOf sends a request and returns the UID of the priority level
// the apiserver served it in, and its status.
func priorityLevelOf(ctx context.Context, hc *http.Client, method, url, body string) (string, int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return "", 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID), resp.StatusCode, nil
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
