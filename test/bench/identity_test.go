package main

import (
	"slices"
	"testing"
)

func TestOnlyExemptRunsInSystemMasters(t *testing.T) {
	for _, f := range fairnessModes {
		for _, name := range contenderNames {
			u := identity(f, name)
			if masters := slices.Contains(u.Groups, "system:masters"); masters != (f == fairnessExempt) {
				t.Errorf("--fairness=%s: %s runs as %s in %v", f, name, u.Name, u.Groups)
			}
		}
	}
	if got := identity(fairnessCluster, "upstream").Name; got != upstreamUser {
		t.Errorf("upstream runs as %s, want %s, whom the flow schema kube-controller-manager matches", got, upstreamUser)
	}
}

// The installer's objects give ours its ServiceAccount, rights and, only
// when asked, its flow schemas, and never a Deployment.
func TestTheInstallerGivesOursItsIdentity(t *testing.T) {
	for _, f := range []fairness{fairnessCluster, fairnessInstall} {
		t.Run(string(f), func(t *testing.T) {
			objs, err := renderInstaller(t.Context(), "../../bin/kustomize", "../../config/default", f)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 || objs[0].GetKind() != "Namespace" {
				t.Fatal("The installer's objects do not begin with its Namespace")
			}
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
				if o.GetKind() == "ServiceAccount" {
					want := identity(f, "ours").Name
					if got := "system:serviceaccount:" + o.GetNamespace() + ":" + o.GetName(); got != want {
						t.Errorf("The installer's ServiceAccount is %s, ours runs as %s", got, want)
					}
				}
			}
			if kinds["ServiceAccount"] != 1 || kinds["ClusterRole"] == 0 || kinds["ClusterRoleBinding"] == 0 {
				t.Errorf("Objects by kind %v, want the ServiceAccount and its RBAC", kinds)
			}
			if kinds["Deployment"] != 0 {
				t.Error("The Deployment is among the objects applied: the bench runs the controller itself")
			}
			if got, want := kinds["FlowSchema"] > 0, f == fairnessInstall; got != want {
				t.Errorf("FlowSchemas applied: %v, want %v", got, want)
			}
		})
	}
}
