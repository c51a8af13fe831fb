package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hashLen is the number of hex digits kept: 64 bits tell versions of one
// object apart, and annotations stay short.
const hashLen = 16

// ConfigHash hashes ConfigMap data (keys and values). It goes on the pod
// templates as AnnotationConfigHash: the ConfigMap keeps its name across
// changes, so without it a new configuration (a new job id on redeploy, a
// changed option) would not replace the pods.
func ConfigHash(data map[string]string) string { return HashOf(data) }

// HashOf is the hex SHA-256 prefix of v's JSON encoding (map keys sorted by
// encoding/json, so it is stable).
func HashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unsupported types fail; the builders hash API types and maps.
		panic("cluster: hashing: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:hashLen]
}

// setSpecHash records, as AnnotationSpecHash, a hash of an object's labels,
// other annotations and spec (or data) as built.
func setSpecHash(meta *metav1.ObjectMeta, spec any) {
	annotations := maps.Clone(meta.Annotations)
	delete(annotations, AnnotationSpecHash)
	h := HashOf(struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Spec        any               `json:"spec"`
	}{meta.Labels, annotations, spec})
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationSpecHash] = h
}

// SpecHashChanged reports whether a live object was built from something
// other than desired (both as returned by this package, live read back from
// the API server): the controller then updates it. Comparing hashes instead
// of objects ignores the fields the API server defaults.
func SpecHashChanged(desired, live metav1.Object) bool {
	want := desired.GetAnnotations()[AnnotationSpecHash]
	return want == "" || live.GetAnnotations()[AnnotationSpecHash] != want
}
