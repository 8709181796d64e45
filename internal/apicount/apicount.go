// Package apicount counts the public names of a module: what a user of
// pmlin can reach and so what every later change must keep working. Its
// test holds each package of pmlin to a ceiling, so that the count, once
// reduced, cannot creep back up unnoticed.
package apicount

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Package is one public package and its exported names.
type Package struct {
	Path  string   // import path
	Names []string // sorted: "F", "T", "T.Method", "T.Field"
	// Fields counts the struct fields among Names: without them, the
	// count is of top-level names and methods only.
	Fields int
}

// Module counts the public packages of the module rooted at dir (which
// holds go.mod): every package but main packages, tests and those under a
// directory named internal or testdata. A name is an exported top-level
// func, type, const or var, an exported method of an exported type, an
// exported field (embedded ones included) of an exported struct type, or
// a method of an exported interface type. Files are those the go command
// builds for this platform, so a name defined once per platform counts
// once.
func Module(dir string) ([]Package, error) {
	modPath, err := modulePath(dir)
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != dir && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); p != dir && err == nil {
			return filepath.SkipDir // another module
		}
		bp, err := build.Default.ImportDir(p, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return fmt.Errorf("%s: %w", p, err)
		}
		if bp.Name == "main" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files := append(append([]string(nil), bp.GoFiles...), bp.CgoFiles...)
		names, fields, err := packageNames(p, files)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, Package{Path: path.Join(modPath, filepath.ToSlash(rel)), Names: names, Fields: fields})
		return nil
	})
	return pkgs, err
}

func packageNames(dir string, files []string) (names []string, fields int, err error) {
	fset := token.NewFileSet()
	set := map[string]bool{} // name -> is a struct field
	exportedType := map[string]bool{}
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, 0, err
		}
		parsed = append(parsed, af)
		for _, decl := range af.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, s := range gd.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						exportedType[ts.Name.Name] = true
					}
				}
			}
		}
	}
	for _, af := range parsed {
		for _, decl := range af.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					set[d.Name.Name] = false
					continue
				}
				if recv := receiverType(d.Recv.List[0].Type); exportedType[recv] {
					set[recv+"."+d.Name.Name] = false
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								set[n.Name] = false
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						set[s.Name.Name] = false
						members(s.Name.Name, s.Type, set)
					}
				}
			}
		}
	}
	for n, field := range set {
		names = append(names, n)
		if field {
			fields++
		}
	}
	sort.Strings(names)
	return names, fields, nil
}

// members adds the exported fields of a struct type and the methods of
// an interface type, those of anonymous struct types within included.
func members(prefix string, t ast.Expr, set map[string]bool) {
	switch t := t.(type) {
	case *ast.StructType:
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 { // embedded: named by its type
				if n := receiverType(f.Type); ast.IsExported(n) {
					set[prefix+"."+n] = true
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					set[prefix+"."+n.Name] = true
					members(prefix+"."+n.Name, f.Type, set)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			for _, n := range m.Names {
				if n.IsExported() {
					set[prefix+"."+n.Name] = false
				}
			}
		}
	case *ast.StarExpr:
		members(prefix, t.X, set)
	case *ast.ArrayType:
		members(prefix, t.Elt, set)
	case *ast.MapType:
		members(prefix, t.Value, set)
	}
}

// receiverType is the name of a receiver's or embedded field's type:
// T, *T, T[P], pkg.T.
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func modulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
}
