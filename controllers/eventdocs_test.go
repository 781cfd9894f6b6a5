package controllers

import (
	"go/ast"
	"go/constant"
	"go/types"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"golang.org/x/tools/go/packages"
)

// emitted is one kind of event a call in the code emits.
type emitted struct{ reason, eventType string }

// TestEveryEventIsListed reads every call that emits an event in the
// module's packages, and checks that Events lists exactly the kinds they
// emit: the reference page of the events is generated from Events.
func TestEveryEventIsListed(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  "..",
	}, "./...")
	if err != nil {
		t.Fatalf("load the module's packages: %v", err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("packages have errors")
	}
	found := map[emitted]string{}
	for _, pkg := range pkgs {
		constString := func(e ast.Expr) (string, bool) {
			tv, ok := pkg.TypesInfo.Types[e]
			if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
				return "", false
			}
			return constant.StringVal(tv.Value), true
		}
		for _, file := range pkg.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				where := pkg.Fset.Position(call.Pos()).String()
				switch {
				case sel.Sel.Name == "Eventf" && len(call.Args) >= 4:
					// events.EventRecorder: regarding, related, type, reason.
					eventType, okType := constString(call.Args[2])
					reason, okReason := constString(call.Args[3])
					if okType && okReason {
						found[emitted{reason, eventType}] = where
					}
				case sel.Sel.Name == "event" && pkg.Types.Name() == "shadow" && len(call.Args) >= 2 && isMethod(pkg.TypesInfo, sel):
					// The dry run's own events, all Normal.
					if reason, ok := constString(call.Args[1]); ok {
						found[emitted{reason, corev1.EventTypeNormal}] = where
					}
				}
				return true
			})
		}
	}
	if len(found) < 10 {
		t.Fatalf("found %d kinds of event in the code; the reading of the calls no longer works: %v", len(found), found)
	}
	listed := map[emitted]bool{}
	for _, e := range Events() {
		k := emitted{e.Reason, e.Type}
		listed[k] = true
		if _, ok := found[k]; !ok {
			t.Errorf("Events lists %s (%s), which no call emits", e.Reason, e.Type)
		}
	}
	for k, where := range found {
		if !listed[k] {
			t.Errorf("%s emits %s (%s), which Events does not list", where, k.reason, k.eventType)
		}
	}
}

func isMethod(info *types.Info, sel *ast.SelectorExpr) bool {
	s, ok := info.Selections[sel]
	return ok && s.Kind() == types.MethodVal
}
