package helmchart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// upstreamValuesEnv names an upstream values.yaml to compare with keys.txt (see
// testdata/upstream-1.15.0/SOURCES.md): the way to re-derive the list for a new upstream release.
const upstreamValuesEnv = "FLINKOP_UPSTREAM_HELM_VALUES"

// upstreamValuesCheck is the body of TestKeysTxtMatchesUpstreamValuesIfEnvSet. With the variable
// unset it compares nothing (ran is false, report says so). Otherwise it compares the file the
// variable names with keysPath; report gives the file's sha256 and, when they differ, the key list
// the file implies, to replace keysPath with.
func upstreamValuesCheck(getenv func(string) string, keysPath string) (ran bool, report string, err error) {
	path := getenv(upstreamValuesEnv)
	if path == "" {
		return false, fmt.Sprintf("%s is unset: nothing compared (set it to upstream's helm/flink-kubernetes-operator/values.yaml to check %s against it)",
			upstreamValuesEnv, keysPath), nil
	}
	sha, derived, diff, err := CheckUpstreamValues(path, keysPath)
	if err != nil {
		return true, fmt.Sprintf("%s=%s: not compared", upstreamValuesEnv, path), err
	}
	report = fmt.Sprintf("%s (sha256 %s): %d key paths; %d comment-only keys kept from %s",
		path, sha, len(derived.Parsed), len(derived.CommentOnly), keysPath)
	if len(diff) > 0 {
		report += fmt.Sprintf("\nthe key list this file implies (comment-only keys new in upstream's comments must be added by hand):\n%s", derived.Format())
		return true, report, fmt.Errorf("%s and %s differ:\n  %s", path, keysPath, strings.Join(diff, "\n  "))
	}
	return true, report, nil
}

// With FLINKOP_UPSTREAM_HELM_VALUES=<upstream's values.yaml>: keys.txt must be exactly its key
// paths. Unset (the usual case): skipped, with the reason in the log.
func TestKeysTxtMatchesUpstreamValuesIfEnvSet(t *testing.T) {
	ran, report, err := upstreamValuesCheck(os.Getenv, upstreamKeys)
	if !ran {
		t.Skip(report)
	}
	t.Log(report)
	if err != nil {
		t.Fatal(err)
	}
}

// keys.txt is well formed and in the form Format writes (sorted, one path a line).
func TestKeysTxtIsCanonical(t *testing.T) {
	data, err := os.ReadFile(upstreamKeys)
	if err != nil {
		t.Fatal(err)
	}
	k := upstreamKeyList(t)
	if got := k.Format(); got != string(data) {
		t.Errorf("%s is not as Format writes it:\n%s", upstreamKeys, got)
	}
	if len(k.Parsed) != 72 || len(k.CommentOnly) != 3 {
		t.Errorf("%s: %d key paths and %d comment-only keys; upstream 1.15.0's values.yaml has 72 and 3", upstreamKeys, len(k.Parsed), len(k.CommentOnly))
	}
}

// A small values file stands in for upstream's.
const smallValues = `image:
  repository: example.com/op
  tag: v1
replicas: 1
podSecurityContext:
  runAsUser: 1000
webhook:
  create: true
  # validator:
  #   create: true
`

const smallKeys = `image.repository
image.tag
podSecurityContext
replicas
webhook.create
webhook.validator.create comment-only
`

func TestUpstreamValuesCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys := write("keys.txt", smallKeys)
	env := func(path string) func(string) string {
		return func(name string) string {
			if name == upstreamValuesEnv {
				return path
			}
			return ""
		}
	}

	t.Run("unset: nothing compared", func(t *testing.T) {
		ran, report, err := upstreamValuesCheck(env(""), keys)
		if ran || err != nil || !strings.Contains(report, upstreamValuesEnv+" is unset: nothing compared") {
			t.Errorf("ran %v err %v report %q", ran, err, report)
		}
	})
	t.Run("same keys", func(t *testing.T) {
		ran, report, err := upstreamValuesCheck(env(write("same.yaml", smallValues)), keys)
		if !ran || err != nil || !strings.Contains(report, "5 key paths; 1 comment-only") {
			t.Errorf("ran %v err %v report %q", ran, err, report)
		}
		// The other order and other values, same keys.
		other := "webhook:\n  create: false\nreplicas: 3\npodSecurityContext: {fsGroup: 1}\nimage: {tag: v2, repository: x}\n"
		if _, _, err := upstreamValuesCheck(env(write("other.yaml", other)), keys); err != nil {
			t.Error(err)
		}
	})
	for _, c := range []struct {
		name, values, want string
		implied            []string // the key list the report gives
	}{
		{"a new key", smallValues + "metrics:\n  port: 9999\n", "metrics.port: a key of the values file, not in the list",
			[]string{"image.repository", "image.tag", "metrics.port", "podSecurityContext", "replicas", "webhook.create", "webhook.validator.create comment-only"}},
		{"a key gone", strings.Replace(smallValues, "  tag: v1\n", "", 1), "image.tag: in the list, not a key of the values file",
			[]string{"image.repository", "podSecurityContext", "replicas", "webhook.create", "webhook.validator.create comment-only"}},
		{"a comment-only key uncommented", strings.Replace(smallValues, "  # validator:\n  #   create: true\n", "  validator:\n    create: true\n", 1),
			"webhook.validator.create: a key of the values file now, marked comment-only in the list",
			[]string{"image.repository", "image.tag", "podSecurityContext", "replicas", "webhook.create", "webhook.validator.create"}},
		{"a map given a key", strings.Replace(smallValues, "replicas: 1\n", "replicas:\n  count: 1\n", 1),
			"replicas.count: a key of the values file, not in the list", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran, report, err := upstreamValuesCheck(env(write(strings.ReplaceAll(c.name, " ", "-")+".yaml", c.values)), keys)
			if !ran || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ran %v err %v: want an error with %q", ran, err, c.want)
			}
			if c.implied != nil && !strings.HasSuffix(report, "\n"+strings.Join(c.implied, "\n")+"\n") {
				t.Errorf("report %q\ndoes not end with the implied list %v", report, c.implied)
			}
		})
	}
	t.Run("no such file", func(t *testing.T) {
		ran, _, err := upstreamValuesCheck(env(filepath.Join(dir, "absent.yaml")), keys)
		if !ran || err == nil {
			t.Errorf("ran %v err %v: a missing file must fail, not pass", ran, err)
		}
	})
	t.Run("not YAML", func(t *testing.T) {
		ran, _, err := upstreamValuesCheck(env(write("bad.yaml", "image: [\n")), keys)
		if !ran || err == nil {
			t.Errorf("ran %v err %v", ran, err)
		}
	})
}

func TestParseKeyList(t *testing.T) {
	k, err := ParseKeyList(smallKeys)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.Parsed, []string{"image.repository", "image.tag", "podSecurityContext", "replicas", "webhook.create"}) ||
		!slices.Equal(k.CommentOnly, []string{"webhook.validator.create"}) {
		t.Errorf("%+v", k)
	}
	if got := k.Format(); got != smallKeys {
		t.Errorf("Format:\n%s\nwant\n%s", got, smallKeys)
	}
	for _, bad := range []string{
		"",
		"a.b",                     // no final newline
		"a.b\n\nc\n",              // blank line
		"b\na\n",                  // not sorted
		"a\na\n",                  // duplicate
		"a\na comment-only\n",     // duplicate with the marker
		"a commented\n",           // unknown marker
		"a comment-only extra\n",  // too many fields
		"a..b\n",                  // not a dotted path
		" a\n",                    // leading space
		"a: 1\n",                  // a values line
		"a\tcomment-only\n",       // marker after a tab
		"defaultConfiguration.\n", // empty last element
	} {
		if _, err := ParseKeyList(bad); err == nil {
			t.Errorf("ParseKeyList(%q) accepted", bad)
		}
	}
}
