package helmchart

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"sigs.k8s.io/yaml"
)

// freeForm are maps whose keys are data (annotations, labels) or the fields of a Kubernetes
// object given whole (a security context, resources, a probe), not value names of the chart: their
// path is the key, whatever they hold.
var freeForm = map[string]bool{
	"strategy":                           true,
	"podSecurityContext":                 true,
	"operatorSecurityContext":            true,
	"webhookSecurityContext":             true,
	"operatorPod.resources":              true,
	"operatorPod.webhook.resources":      true,
	"operatorHealth.livenessProbe":       true,
	"operatorHealth.startupProbe":        true,
	"operatorHealth.readinessProbe":      true,
	"jobServiceAccount.annotations":      true,
	"operatorServiceAccount.annotations": true,
	"operatorPod.annotations":            true,
	"operatorPod.labels":                 true,
	"operatorPod.nodeSelector":           true,
	"operatorPod.affinity":               true,
	"operatorPod.dnsConfig":              true,
	"webhook.serviceLabels":              true,
	"postStart":                          true,
}

// ReadValues decodes a Helm values file.
func ReadValues(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// KeyPaths lists the dotted paths of a values tree's keys, sorted: a path per leaf (a scalar,
// null, a list, an empty map or a freeForm map); the keys of a non-empty map are walked into.
func KeyPaths(values map[string]any) []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !freeForm[path] {
				walk(path, sub)
				continue
			}
			out = append(out, path)
		}
	}
	walk("", values)
	sort.Strings(out)
	return out
}

// Missing returns the paths of want that got lacks. A path of want is present when got has it, or
// when got has a leaf that is a prefix of it (a freeForm map, or a map given whole).
func Missing(want, got []string) []string {
	var out []string
	for _, p := range want {
		if slices.Contains(got, p) {
			continue
		}
		covered := false
		for _, g := range got {
			if len(p) > len(g) && p[:len(g)] == g && p[len(g)] == '.' {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}
