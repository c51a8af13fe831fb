package flink

import (
	"path"
	"sort"
	"strings"
)

// ImageFlinkHome is FLINK_HOME (and the working directory) in the official image.
const ImageFlinkHome = "/opt/flink"

// pathMapper maps absolute paths of the container's file system (the image's
// /opt/flink, and volume mount points given in LaunchOptions.PathMap) to host
// paths, inside arguments and configuration values. A path maps whether or not
// it exists: a jar the image lacks fails in Flink as it would in a pod.
type pathMapper struct {
	prefixes []string // longest first
	target   map[string]string
}

func newPathMapper(home string, extra map[string]string) *pathMapper {
	m := &pathMapper{target: map[string]string{ImageFlinkHome: home}}
	for k, v := range extra {
		m.target[strings.TrimSuffix(k, "/")] = strings.TrimSuffix(v, "/")
	}
	for k := range m.target {
		m.prefixes = append(m.prefixes, k)
	}
	sort.Slice(m.prefixes, func(i, j int) bool { return len(m.prefixes[i]) > len(m.prefixes[j]) })
	return m
}

// isDelim ends a path inside a string: whitespace, quotes, list separators.
func isDelim(c byte) bool {
	return strings.IndexByte(" \t\r\n\"',;]}", c) >= 0
}

// Rewrite replaces every mapped path in s. A path counts only where it starts a
// token (start of s, after a delimiter, '=' or ':', or after "scheme://") and
// where the prefix ends at a '/' or the end of the token.
func (m *pathMapper) Rewrite(s string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		if s[i] == '/' && m.startsToken(s, i) {
			if pfx, ok := m.matchAt(s, i); ok {
				end := i + len(pfx)
				for end < len(s) && !isDelim(s[end]) {
					end++
				}
				b.WriteString(m.mapPath(pfx, s[i:end]))
				i = end
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func (m *pathMapper) startsToken(s string, i int) bool {
	if i == 0 || isDelim(s[i-1]) || s[i-1] == '=' || s[i-1] == ':' {
		return true
	}
	return i >= 3 && s[i-3:i] == "://"
}

func (m *pathMapper) matchAt(s string, i int) (string, bool) {
	for _, p := range m.prefixes {
		if strings.HasPrefix(s[i:], p) {
			end := i + len(p)
			if end == len(s) || s[end] == '/' || isDelim(s[end]) {
				return p, true
			}
		}
	}
	return "", false
}

func (m *pathMapper) mapPath(prefix, p string) string {
	return path.Clean(m.target[prefix] + strings.TrimPrefix(p, prefix))
}
