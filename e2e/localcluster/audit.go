package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AuditOptions configure the API server's audit log (Options.Audit): one
// JSON line per request of Users with one of Verbs, at Metadata level (who,
// verb, resource, subresource, namespace, name, response code and
// timestamps; no bodies), written once the response is complete (the
// RequestReceived stage is omitted). Other requests are not logged.
type AuditOptions struct {
	// Path of the log file (JSON lines). Required.
	Path string
	// Users whose requests are logged. Default: OperatorUser.
	Users []string
	// Verbs logged. Default: the writes, create, update, patch, delete and
	// deletecollection.
	Verbs []string
}

// DefaultAuditVerbs are the verbs AuditOptions logs by default.
var DefaultAuditVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// apiserverArgs writes the audit policy into dir and returns the
// kube-apiserver flags; none without audit options.
func (a *AuditOptions) apiserverArgs(dir string) ([]string, error) {
	if a == nil {
		return nil, nil
	}
	if a.Path == "" {
		return nil, fmt.Errorf("audit options without a log path")
	}
	users, verbs := a.Users, a.Verbs
	if len(users) == 0 {
		users = []string{OperatorUser}
	}
	if len(verbs) == 0 {
		verbs = DefaultAuditVerbs
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy(users, verbs)), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(a.Path), 0o755); err != nil {
		return nil, err
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + a.Path,
		"--audit-log-format=json",
		// No rotation: a benchmark reads the whole file (lumberjack would
		// rotate at 100 MB by default).
		"--audit-log-maxsize=100000",
		"--audit-log-maxbackup=0",
		// Each event is written before the response is sent, so a reader
		// that sees a client's response also finds its line.
		"--audit-log-mode=blocking",
	}, nil
}

// AuditPolicy is an audit.k8s.io/v1 policy that logs the requests of users
// with verbs at Metadata level, and nothing else.
func AuditPolicy(users, verbs []string) string {
	q := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: %s
  verbs: %s
- level: None
`, q(users), q(verbs))
}
