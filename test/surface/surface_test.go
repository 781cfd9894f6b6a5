// Package surface checks what the module offers outside code: no exported
// name of a public package reaches a type it could not name, and the
// reporter, which node agents embed, pulls in no controller framework.
package surface

import (
	"go/types"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/nodelifecycle/node-lifecycle-controller"

// public are the packages outside code may import.
var public = []string{module + "/api/...", module + "/config/crd", module + "/controllers/...", module + "/pkg/..."}

func load(t *testing.T, mode packages.LoadMode, patterns ...string) []*packages.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: mode, Dir: "../.."}, patterns...)
	if err != nil {
		t.Fatalf("load %v: %v", patterns, err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("packages have errors")
	}
	return pkgs
}

// TestNoExportedNameReachesAnInternalType walks every exported name of the
// public packages (functions, variables, constants, types, their fields and
// methods) and fails on each that names a type from an internal package,
// which outside code could neither construct nor name.
func TestNoExportedNameReachesAnInternalType(t *testing.T) {
	for _, pkg := range load(t, packages.NeedName|packages.NeedTypes, public...) {
		if strings.HasSuffix(pkg.PkgPath, "/cmd/fleet") {
			continue // a command: nothing to import
		}
		scope := pkg.Types.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			where := pkg.PkgPath + "." + name
			if tn, ok := obj.(*types.TypeName); ok {
				checkNamed(t, where, tn.Type())
				continue
			}
			if bad := internalIn(obj.Type(), map[types.Type]bool{}); bad != "" {
				t.Errorf("%s names %s", where, bad)
			}
		}
	}
}

// checkNamed checks a public type's underlying type and exported methods.
func checkNamed(t *testing.T, where string, typ types.Type) {
	t.Helper()
	seen := map[types.Type]bool{typ: true}
	if bad := internalIn(typ.Underlying(), seen); bad != "" {
		t.Errorf("%s names %s", where, bad)
	}
	ms := types.NewMethodSet(types.NewPointer(typ))
	for m := range ms.Methods() {
		if !m.Obj().Exported() {
			continue
		}
		if bad := internalIn(m.Type(), map[types.Type]bool{typ: true}); bad != "" {
			t.Errorf("%s.%s names %s", where, m.Obj().Name(), bad)
		}
	}
}

// internalIn returns the first internal type typ reaches through exported
// fields, parameters, results and elements, or "".
func internalIn(typ types.Type, seen map[types.Type]bool) string {
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && strings.Contains(p.Path(), "/internal/") && strings.HasPrefix(p.Path(), module) {
			return p.Path() + "." + t.Obj().Name()
		}
		for a := range t.TypeArgs().Types() {
			if bad := internalIn(a, seen); bad != "" {
				return bad
			}
		}
		return "" // a public named type is checked on its own
	case *types.Alias:
		return internalIn(types.Unalias(t), seen)
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if bad := internalIn(t.Key(), seen); bad != "" {
			return bad
		}
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tuple.Variables() {
				if bad := internalIn(v.Type(), seen); bad != "" {
					return bad
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				if bad := internalIn(f.Type(), seen); bad != "" {
					return bad
				}
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if bad := internalIn(m.Type(), seen); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// TestReporterNeedsNoControllerFramework: a node agent embeds the reporter
// with client-go, apimachinery and logr, as the kubelet is built.
func TestReporterNeedsNoControllerFramework(t *testing.T) {
	for _, pattern := range []string{module + "/pkg/reporter", module + "/pkg/options"} {
		pkgs := load(t, packages.NeedName|packages.NeedImports|packages.NeedDeps, pattern)
		var deps []string
		packages.Visit(pkgs, nil, func(p *packages.Package) { deps = append(deps, p.PkgPath) })
		if i := slices.IndexFunc(deps, func(p string) bool { return strings.HasPrefix(p, "sigs.k8s.io/controller-runtime") }); i >= 0 {
			t.Errorf("%s depends on %s", pattern, deps[i])
		}
		if i := slices.IndexFunc(deps, func(p string) bool { return strings.HasPrefix(p, module+"/internal/") }); i >= 0 {
			t.Errorf("%s depends on %s", pattern, deps[i])
		}
	}
}
