package reasons

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/flinkops/flink-operator/pkg/reasons"

// eventReasonForm is what an event reason looks like (UpperCamelCase), as
// opposed to prose held in a constant named reason... (pkg/config's
// parity reasons, for example).
var eventReasonForm = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// reasonName reports whether a constant's name says it is an event reason:
// Reason..., or reason followed by an upper-case letter.
func reasonName(name string) (exported, ok bool) {
	switch {
	case strings.HasPrefix(name, "Reason"):
		return true, true
	case len(name) > len("reason") && strings.HasPrefix(name, "reason") && name[len("reason")] >= 'A' && name[len("reason")] <= 'Z':
		return false, true
	}
	return false, false
}

// reasonConst is one constant found by reasonConsts.
type reasonConst struct {
	name, at string
	value    string // the string literal's value; "" when not a literal
	literal  bool
}

// reasonConsts are the constants of file named as an event reason: every
// Reason... one with a value (a string literal, or another constant: an
// alias), and the reason... ones whose string value has an event reason's
// form.
func reasonConsts(fset *token.FileSet, f *ast.File) []reasonConst {
	var found []reasonConst
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			continue
		}
		for _, spec := range d.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				exported, ok := reasonName(n.Name)
				if !ok || i >= len(vs.Values) {
					continue
				}
				c := reasonConst{name: n.Name, at: fset.Position(n.Pos()).String()}
				switch v := vs.Values[i].(type) {
				case *ast.BasicLit:
					if v.Kind != token.STRING {
						continue
					}
					c.value, _ = strconv.Unquote(v.Value)
					c.literal = true
				case *ast.Ident, *ast.SelectorExpr:
				default:
					continue
				}
				if !exported && !eventReasonForm.MatchString(c.value) {
					continue
				}
				found = append(found, c)
			}
		}
	}
	return found
}

// problems checks the production files of a module (path relative to its
// root → source): event reasons are declared in pkg/reasons only, as
// literals, each value once; pkg/reasons imports nothing, and pkg/apis
// does not import it.
func problems(t *testing.T, files map[string]string) []string {
	t.Helper()
	var out []string
	byValue := map[string][]string{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, files[p], parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		home := filepath.ToSlash(filepath.Dir(p)) == "pkg/reasons"
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case home:
				out = append(out, p+": pkg/reasons imports "+ip+"; it imports nothing, so that every package can use it without a cycle")
			case ip == importPath && strings.HasPrefix(filepath.ToSlash(p), "pkg/apis/"):
				out = append(out, p+": the API types import pkg/reasons")
			}
		}
		for _, c := range reasonConsts(fset, f) {
			switch {
			case !home:
				out = append(out, c.at+": event reason "+c.name+" declared outside pkg/reasons; use (or add) the one there")
			case !c.literal:
				out = append(out, c.at+": "+c.name+" is not a string literal")
			default:
				byValue[c.value] = append(byValue[c.value], c.at+" "+c.name)
			}
		}
	}
	values := make([]string, 0, len(byValue))
	for v := range byValue {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		if at := byValue[v]; len(at) > 1 {
			out = append(out, strconv.Quote(v)+" is declared more than once: "+strings.Join(at, ", "))
		}
	}
	return out
}

// moduleFiles reads the module's production Go files, by path relative to
// its root. e2e/ is test tooling, not the operator: its node agent, a
// stand-in kubelet, declares the container waiting reasons it reports.
func moduleFiles(t *testing.T) map[string]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("no go.mod at the module root: ", err)
	}
	files := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor" || d.Name() == "testdata" || rel == "e2e") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[rel] = string(src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDeclaredOnce: every event reason of the operator is declared once,
// here (issue 32). A Reason... constant elsewhere in production code, or
// two reasons with the same value, fail.
func TestDeclaredOnce(t *testing.T) {
	files := moduleFiles(t)
	n := 0
	fset := token.NewFileSet()
	for p, src := range files {
		if filepath.ToSlash(filepath.Dir(p)) == "pkg/reasons" {
			f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			n += len(reasonConsts(fset, f))
		}
	}
	if n == 0 {
		t.Fatal("no reasons found in pkg/reasons: the walk is broken")
	}
	for _, p := range problems(t, files) {
		t.Error(p)
	}
}

// TestProblemsFound: the check fails on what it is there to catch.
func TestProblemsFound(t *testing.T) {
	files := map[string]string{
		"pkg/reasons/reasons.go": "package reasons\n\nconst (\n\tReasonA = \"A\"\n\tReasonB = \"A\"\n)\n",
		"pkg/controller/x/x.go": "package x\n\nimport \"" + importPath + "\"\n\nconst ReasonC = \"C\"\n\nconst reasonD = \"D\"\n\n" +
			"const ReasonE = reasons.ReasonA\n\nconst reasonProse = \"not a reason, prose\"\n\nconst reasonless = \"X\"\n",
		"pkg/apis/flink/v1beta1/y.go": "package v1beta1\n\nimport _ \"" + importPath + "\"\n",
	}
	got := strings.Join(problems(t, files), "\n")
	for _, want := range []string{
		`"A" is declared more than once: pkg/reasons/reasons.go:4:2 ReasonA, pkg/reasons/reasons.go:5:2 ReasonB`,
		"pkg/controller/x/x.go:5:7: event reason ReasonC declared outside pkg/reasons",
		"pkg/controller/x/x.go:7:7: event reason reasonD declared outside pkg/reasons",
		"pkg/controller/x/x.go:9:7: event reason ReasonE declared outside pkg/reasons",
		"pkg/apis/flink/v1beta1/y.go: the API types import pkg/reasons",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing problem %q in:\n%s", want, got)
		}
	}
	for _, not := range []string{"reasonProse", "reasonless"} {
		if strings.Contains(got, not) {
			t.Errorf("%s reported:\n%s", not, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 5 {
		t.Errorf("%d problems, want 5:\n%s", n, got)
	}
}
