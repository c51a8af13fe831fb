package helmchart

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// CommentOnly marks a line of a key list whose key upstream's values.yaml names in a comment only
// (so KeyPaths does not find it) and its templates read: "<path> comment-only".
const CommentOnly = "comment-only"

// KeyList is the content of a key list such as testdata/upstream-1.15.0/keys.txt: one dotted path a
// line, sorted, no duplicates; a line is either a path of KeyPaths(upstream's values.yaml) or a path
// followed by CommentOnly.
type KeyList struct {
	Parsed      []string // exactly KeyPaths of upstream's values.yaml
	CommentOnly []string // the keys upstream documents in comments only
}

var keyPathRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9][A-Za-z0-9_-]*)*$`)

// ParseKeyList reads a key list's text. It fails on a blank or malformed line, an unknown marker,
// a duplicate, or lines out of order.
func ParseKeyList(text string) (KeyList, error) {
	var k KeyList
	var all []string
	text, ok := strings.CutSuffix(text, "\n")
	if !ok || text == "" {
		return k, fmt.Errorf("a key list is non-empty and ends with a newline")
	}
	for i, line := range strings.Split(text, "\n") {
		fields := strings.Split(line, " ")
		path := fields[0]
		if !keyPathRE.MatchString(path) || len(fields) > 2 {
			return k, fmt.Errorf("line %d: %q is not <dotted.path> or <dotted.path> %s", i+1, line, CommentOnly)
		}
		if len(fields) == 2 {
			if fields[1] != CommentOnly {
				return k, fmt.Errorf("line %d: %q: the only marker is %q", i+1, line, CommentOnly)
			}
			k.CommentOnly = append(k.CommentOnly, path)
		} else {
			k.Parsed = append(k.Parsed, path)
		}
		if n := len(all); n > 0 && all[n-1] >= path {
			return k, fmt.Errorf("line %d: %q is not after %q: the list is sorted, without duplicates", i+1, path, all[n-1])
		}
		all = append(all, path)
	}
	return k, nil
}

// ReadKeyList reads a key list file.
func ReadKeyList(path string) (KeyList, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return KeyList{}, err
	}
	k, err := ParseKeyList(string(data))
	if err != nil {
		return k, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// Format is the key list's text, as ParseKeyList reads it.
func (k KeyList) Format() string {
	type line struct{ path, text string }
	var lines []line
	for _, p := range k.Parsed {
		lines = append(lines, line{p, p})
	}
	for _, p := range k.CommentOnly {
		lines = append(lines, line{p, p + " " + CommentOnly})
	}
	slices.SortFunc(lines, func(a, b line) int { return strings.Compare(a.path, b.path) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// CheckUpstreamValues compares the key paths of an upstream values.yaml (valuesPath) with a key
// list (keysPath). It returns the file's sha256, the key list the file implies (its KeyPaths, plus
// the list's comment-only keys that are still not keys of the file: upstream's comments are not
// read, a new comment-only key must be added by hand) and the differences, one a line: a key path
// of the file the list lacks, a key the list has and the file does not, a comment-only key that is
// now a key of the file. err is for a file that cannot be read or decoded.
func CheckUpstreamValues(valuesPath, keysPath string) (sha string, derived KeyList, diff []string, err error) {
	data, err := os.ReadFile(valuesPath)
	if err != nil {
		return "", derived, nil, err
	}
	sum := sha256.Sum256(data)
	sha = hex.EncodeToString(sum[:])
	values, err := ReadValues(valuesPath)
	if err != nil {
		return sha, derived, nil, err
	}
	recorded, err := ReadKeyList(keysPath)
	if err != nil {
		return sha, derived, nil, err
	}
	derived.Parsed = KeyPaths(values)
	for _, p := range recorded.CommentOnly {
		if !slices.Contains(derived.Parsed, p) {
			derived.CommentOnly = append(derived.CommentOnly, p)
		}
	}
	for _, p := range derived.Parsed {
		switch {
		case slices.Contains(recorded.CommentOnly, p):
			diff = append(diff, fmt.Sprintf("%s: a key of the values file now, marked %s in the list", p, CommentOnly))
		case !slices.Contains(recorded.Parsed, p):
			diff = append(diff, fmt.Sprintf("%s: a key of the values file, not in the list", p))
		}
	}
	for _, p := range recorded.Parsed {
		if !slices.Contains(derived.Parsed, p) {
			diff = append(diff, fmt.Sprintf("%s: in the list, not a key of the values file", p))
		}
	}
	return sha, derived, diff, nil
}
