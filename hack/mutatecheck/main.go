// Command mutatecheck re-runs, one by one, the mutants gremlins reports as
// NOT COVERED (or LIVED) in one package, each applied with go test -overlay
// so the tree is never touched, and says whether the package's tests kill
// it. gremlins v0.6.0 reports every condition on a switch case line and
// every package-level constant as NOT COVERED even when tests run it: they
// sit outside Go's coverage blocks. make mutate pipes gremlins' output here.
//
//	gremlins unleash --output-statuses lc ./pkg/x | go run ./hack/mutatecheck ./pkg/x
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var report = regexp.MustCompile(`(NOT COVERED|LIVED) +([A-Z_]+) at ([^:]+):(\d+):(\d+)`)

// replacements are gremlins' mutations by kind: the operator at the
// reported column and what it becomes.
var replacements = map[string]map[string]string{
	"CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", "<=": ">", ">=": "<", "<": ">=", ">": "<="},
	"CONDITIONALS_BOUNDARY": {"<=": "<", ">=": ">", "<": "<=", ">": ">="},
	"ARITHMETIC_BASE":       {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
	"INCREMENT_DECREMENT":   {"++": "--", "--": "++"},
	"INVERT_NEGATIVES":      {"-": "+"},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gremlins ... | mutatecheck ./pkg/<package>")
		os.Exit(2)
	}
	pkg := os.Args[1]
	tmp, err := os.MkdirTemp("", "mutatecheck")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	killed, survived := 0, 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Println(sc.Text())
		m := report.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[4])
		col, _ := strconv.Atoi(m[5])
		verdict, err := check(tmp, pkg, m[3], line, col, m[2])
		if err != nil {
			verdict = "NOT CHECKED (" + err.Error() + ")"
		}
		if verdict == "KILLED" {
			killed++
		} else {
			survived++
		}
		fmt.Printf("  -> by hand: %s\n", verdict)
	}
	fmt.Printf("mutatecheck %s: %d reported mutants killed when applied by hand, %d survive\n", pkg, killed, survived)
}

// check applies one mutation through an overlay and runs the package's
// tests.
func check(tmp, pkg, file string, line, col int, kind string) (string, error) {
	path, err := filepath.Abs(filepath.Join(pkg, file))
	if err != nil {
		return "", err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) || col < 1 || col > len(lines[line-1]) {
		return "", fmt.Errorf("no such position")
	}
	mutated, err := mutateLine(lines[line-1], col, kind)
	if err != nil {
		return "", fmt.Errorf("%s:%d:%d: %w", file, line, col, err)
	}
	lines[line-1] = mutated
	dir := filepath.Join(tmp, fmt.Sprintf("%s-%d-%d", filepath.Base(file), line, col))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	copyPath := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(copyPath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {path: copyPath}})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "test", "-count=1", "-failfast", "-timeout", "300s", "-overlay", overlayPath, pkg)
	out, err := cmd.CombinedOutput()
	switch {
	case err == nil:
		return "LIVED", nil
	case strings.Contains(string(out), "[build failed]"), strings.Contains(string(out), "[setup failed]"):
		return "KILLED (does not compile)", nil
	}
	return "KILLED", nil
}

// mutateLine applies gremlins' mutation of kind to the operator starting at
// column col (1-based) of text.
func mutateLine(text string, col int, kind string) (string, error) {
	before, rest := text[:col-1], text[col-1:]
	for _, width := range []int{2, 1} {
		if len(rest) >= width {
			if to, ok := replacements[kind][rest[:width]]; ok {
				return before + to + rest[width:], nil
			}
		}
	}
	return "", fmt.Errorf("no %s operator there", kind)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
