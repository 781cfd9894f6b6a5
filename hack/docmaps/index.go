package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Index is what the module's Go code declares, by package name (the last
// element of the package's path).
type Index struct {
	// Funcs holds each package's functions, Types its types and Methods
	// each of its types' methods, by package name.
	Funcs, Types map[string]map[string]bool
	// Methods holds, by package name and then receiver type name, the
	// methods declared on the type or in it (an interface's).
	Methods map[string]map[string]map[string]bool
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{
		Funcs:   map[string]map[string]bool{},
		Types:   map[string]map[string]bool{},
		Methods: map[string]map[string]map[string]bool{},
	}
}

func (x *Index) addFunc(pkg, name string) { add(x.Funcs, pkg, name) }
func (x *Index) addType(pkg, name string) { add(x.Types, pkg, name) }
func (x *Index) addMethod(pkg, recv, name string) {
	if x.Methods[pkg] == nil {
		x.Methods[pkg] = map[string]map[string]bool{}
	}
	add(x.Methods[pkg], recv, name)
}

func add(m map[string]map[string]bool, key, name string) {
	if m[key] == nil {
		m[key] = map[string]bool{}
	}
	m[key][name] = true
}

// isPackage tells whether name is the name of one of the module's packages.
func (x *Index) isPackage(name string) bool {
	return x.Funcs[name] != nil || x.Types[name] != nil || x.Methods[name] != nil
}

// isType tells whether some package of the module declares a type name.
func (x *Index) isType(name string) bool {
	for _, types := range x.Types {
		if types[name] {
			return true
		}
	}
	return false
}

// hasMethod tells whether a type called recv in the package pkg, or in any
// package when pkg is "", has a method name.
func (x *Index) hasMethod(pkg, recv, name string) bool {
	for p, byType := range x.Methods {
		if (pkg == "" || p == pkg) && byType[recv][name] {
			return true
		}
	}
	return false
}

// loadIndex parses the non-test Go files under each of trees, relative to
// root (those absent are skipped), without type checking.
func loadIndex(root string, trees []string) (*Index, error) {
	idx := NewIndex()
	fset := token.NewFileSet()
	for _, tree := range trees {
		top := filepath.Join(root, tree)
		if _, err := os.Stat(top); err != nil {
			continue
		}
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != top && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return fmt.Errorf("parse: %w", err)
			}
			indexFile(idx, filepath.Base(filepath.Dir(p)), f)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("index the Go code under %s: %w", tree, err)
		}
	}
	return idx, nil
}

// indexFile adds the declarations of one file of the package pkg to idx.
func indexFile(idx *Index, pkg string, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				idx.addFunc(pkg, d.Name.Name)
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); recv != "" {
				idx.addMethod(pkg, recv, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				idx.addType(pkg, ts.Name.Name)
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					for _, m := range it.Methods.List {
						for _, n := range m.Names {
							idx.addMethod(pkg, ts.Name.Name, n.Name)
						}
					}
				}
			}
		}
	}
}

// receiverName returns the type name of a method's receiver: T of T, *T,
// T[K] or *T[K, V].
func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
