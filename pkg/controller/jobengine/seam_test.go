package jobengine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// parsePackage parses the package's own non-test Go files.
func parsePackage(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// kindTypes are the resource kinds and specs the engine must not tell
// apart by their type: it reads them through Object and Spec, and what a
// kind may do is its Driver's to say (issue 32).
var kindTypes = map[string]bool{
	"FlinkDeployment": true, "FlinkSessionJob": true,
	"FlinkDeploymentSpec": true, "FlinkSessionJobSpec": true,
}

// namesKind reports the kind type a type expression names, if any.
func namesKind(e ast.Expr) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if kindTypes[n.Name] {
				found = n.Name
			}
		case *ast.SelectorExpr:
			if kindTypes[n.Sel.Name] {
				found = n.Sel.Name
			}
			return false
		}
		return found == ""
	})
	return found
}

// TestNoKindSwitch: the engine's production code has no type switch case
// and no type assertion naming a job resource kind or its spec.
func TestNoKindSwitch(t *testing.T) {
	fset, files := parsePackage(t, ".")
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil {
					if kind := namesKind(n.Type); kind != "" {
						t.Errorf("%s: type assertion to %s: read the kind through Object or Spec, or ask its Driver", fset.Position(n.Pos()), kind)
					}
				}
			case *ast.TypeSwitchStmt:
				for _, c := range n.Body.List {
					for _, typ := range c.(*ast.CaseClause).List {
						if kind := namesKind(typ); kind != "" {
							t.Errorf("%s: type switch case %s: read the kind through Object or Spec, or ask its Driver", fset.Position(typ.Pos()), kind)
						}
					}
				}
			}
			return true
		})
	}
}
