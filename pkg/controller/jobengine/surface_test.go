package jobengine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/flinkops/flink-operator/pkg/controller/jobengine"

// exported is what the package exports, by how it is used from outside.
type exported struct {
	pkgLevel   map[string]string // funcs, types, consts, vars: used as jobengine.Name
	members    map[string]string // methods and struct fields: used as x.Name
	implements map[string]string // interface methods: implemented (or called) outside
	// memberOf gives the exported fields and methods of each type, and
	// the methods of each interface type: a type whose members are used
	// outside is used, even where its name is inferred.
	memberOf map[string][]string
}

func exportedNames(t *testing.T) exported {
	fset, files := parsePackage(t, ".")
	ex := exported{map[string]string{}, map[string]string{}, map[string]string{}, map[string][]string{}}
	pos := func(n ast.Node) string { return fset.Position(n.Pos()).String() }
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				switch {
				case !d.Name.IsExported():
				case d.Recv == nil:
					ex.pkgLevel[d.Name.Name] = pos(d)
				default:
					ex.members[d.Name.Name] = pos(d)
					ex.memberOf[receiverType(d.Recv.List[0].Type)] = append(ex.memberOf[receiverType(d.Recv.List[0].Type)], d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								ex.pkgLevel[n.Name] = pos(n)
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							ex.pkgLevel[s.Name.Name] = pos(s)
						}
						switch typ := s.Type.(type) {
						case *ast.StructType:
							for _, field := range typ.Fields.List {
								for _, n := range field.Names {
									ex.memberOf[s.Name.Name] = append(ex.memberOf[s.Name.Name], n.Name)
									// A field of a JSON record (upstream's
									// ClusterHealthInfo, FlinkResourceException)
									// is exported for encoding/json.
									if n.IsExported() && (field.Tag == nil || !strings.Contains(field.Tag.Value, "json:")) {
										ex.members[n.Name] = pos(n)
									}
								}
							}
						case *ast.InterfaceType:
							for _, m := range typ.Methods.List {
								for _, n := range m.Names {
									ex.memberOf[s.Name.Name] = append(ex.memberOf[s.Name.Name], n.Name)
									if n.IsExported() {
										ex.implements[n.Name] = pos(n)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return ex
}

// receiverType names a method's receiver type.
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
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

// usedByTests are exported only for the controllers' tests, which assert
// on what a sync wrote: the message inside status.error. Each must still
// be used by some test outside the package. (The event reasons are
// pkg/reasons'.)
var usedByTests = map[string]bool{
	"ErrorMessage": true, "ParseError": true,
	// deployment's TestClassify.
	"ChangeSuspended": true, "ChangeSuspend": true, "ChangeRedeploy": true, "ChangeUpgrade": true,
}

// moduleRoot is the directory of go.mod above the package.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}

// TestExportedAreUsedOutside: every exported identifier of jobengine is
// used by the module's other production code (a controller, mostly), so the
// package's surface is what its users need (issue 32). A package-level name
// counts as used when some file writes jobengine.Name; a method or field
// when some file selects x.Name (promoted through a controller's embedding
// of State included); an interface method when some file implements it
// (declares a method of that name) or calls it.
func TestExportedAreUsedOutside(t *testing.T) {
	ex := exportedNames(t)
	root := moduleRoot(t)
	self, _ := filepath.Abs(".")
	pkgUsed, selected, declared := map[string]bool{}, map[string]bool{}, map[string]bool{}
	testUsed := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == self || path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		test := strings.HasSuffix(path, "_test.go")
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
				local = "jobengine"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if test {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && local != "" && x.Name == local {
						testUsed[sel.Sel.Name] = true
					}
				}
				return true
			}
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && local != "" && x.Name == local {
					pkgUsed[n.Sel.Name] = true
				} else {
					selected[n.Sel.Name] = true
				}
			case *ast.KeyValueExpr: // a field set in a composite literal
				if k, ok := n.Key.(*ast.Ident); ok {
					selected[k.Name] = true
				}
			case *ast.FuncDecl:
				if n.Recv != nil {
					declared[n.Name.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var unused []string
	membersUsed := func(typ string) bool {
		for _, m := range ex.memberOf[typ] {
			if ast.IsExported(m) && (selected[m] || declared[m]) {
				return true
			}
		}
		return false
	}
	for name := range usedByTests {
		if !testUsed[name] {
			unused = append(unused, name+" (in usedByTests, but no test outside the package uses it)")
		}
	}
	for name, at := range ex.pkgLevel {
		if !pkgUsed[name] && !membersUsed(name) && !usedByTests[name] {
			unused = append(unused, at+": "+name+" (no jobengine."+name+" outside the package)")
		}
	}
	for name, at := range ex.members {
		if !selected[name] {
			unused = append(unused, at+": "+name+" (no ."+name+" outside the package)")
		}
	}
	for name, at := range ex.implements {
		if !declared[name] && !selected[name] {
			unused = append(unused, at+": "+name+" (not implemented nor called outside the package)")
		}
	}
	sort.Strings(unused)
	for _, u := range unused {
		t.Errorf("exported but not used outside jobengine: %s; unexport it", u)
	}
}
