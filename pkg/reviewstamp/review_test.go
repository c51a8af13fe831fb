package reviewstamp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type keys [][]byte

func (k keys) Keys() [][]byte { return k }

var (
	key     = []byte("0123456789abcdef0123456789abcdef")
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	target  = Reference{Kind: "FlinkDeployment", Namespace: "team-b", Name: "orders"}
	objMeta = func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: "team-a", Name: "sp"}
	}
)

// signed returns an object stamped at CREATE (no uid) and as the API server
// then stores it (uid and creationTimestamp set).
func signed(t *testing.T, kind string, ref Reference) *metav1.ObjectMeta {
	t.Helper()
	m := objMeta()
	v, err := Sign(key, kind, m, ref, "bob", t0)
	if err != nil {
		t.Fatal(err)
	}
	m.Annotations = map[string]string{Annotation: v}
	m.UID = "uid-1"
	m.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
	return m
}

func TestVerifyValidStamp(t *testing.T) {
	m := signed(t, "FlinkStateSnapshot", target)
	s, err := Verify(keys{key}, "FlinkStateSnapshot", m, target)
	if err != nil {
		t.Fatal(err)
	}
	if s.User != "bob" || s.UID != "" || s.Issued != "2026-03-01T12:00:00Z" {
		t.Errorf("stamp %+v", s)
	}
	// A rotated-in key list still accepts it while the old key is listed.
	if _, err := Verify(keys{[]byte("a newer key, listed first......."), key}, "FlinkStateSnapshot", m, target); err != nil {
		t.Errorf("old key no longer accepted: %v", err)
	}
}

// Every way of reusing or forging a stamp fails, each with its reason.
func TestVerifyRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(m *metav1.ObjectMeta) (kind string, ref Reference, ks Keys)
		want   string
	}{
		{"copied to another name", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.Name = "other"
			return "FlinkStateSnapshot", target, keys{key}
		}, "does not vouch for this FlinkStateSnapshot team-a/other"},
		{"copied to another namespace", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.Namespace = "team-c"
			return "FlinkStateSnapshot", target, keys{key}
		}, "does not vouch"},
		{"copied to another kind", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			return "FlinkDeployment", target, keys{key}
		}, "does not vouch"},
		{"reference edited", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			return "FlinkStateSnapshot", Reference{Kind: "FlinkDeployment", Namespace: "team-b", Name: "payments"}, keys{key}
		}, "does not vouch"},
		{"reference kind edited", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			return "FlinkStateSnapshot", Reference{Kind: "FlinkSessionJob", Namespace: "team-b", Name: "orders"}, keys{key}
		}, "does not vouch"},
		{"user edited", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.Annotations[Annotation] = strings.Replace(m.Annotations[Annotation], `"user":"bob"`, `"user":"admin"`, 1)
			return "FlinkStateSnapshot", target, keys{key}
		}, "does not vouch"},
		{"issued time moved to a re-created object", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.Annotations[Annotation] = strings.Replace(m.Annotations[Annotation], "12:00:00Z", "13:00:00Z", 1)
			m.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
			return "FlinkStateSnapshot", target, keys{key}
		}, "does not vouch"},
		{"replayed on a re-created object", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.UID = "uid-2"
			m.CreationTimestamp = metav1.NewTime(t0.Add(CreateWindow + time.Minute))
			return "FlinkStateSnapshot", target, keys{key}
		}, "not for this one"},
		{"wrong key", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			return "FlinkStateSnapshot", target, keys{[]byte("somebody else's key.............")}
		}, "does not vouch"},
		{"no key loaded", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			return "FlinkStateSnapshot", target, nil
		}, "has not loaded its review key"},
		{"no annotation", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.Annotations = nil
			return "FlinkStateSnapshot", target, keys{key}
		}, "has no flinkops.io/cross-namespace-review annotation"},
		{"garbage", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			m.Annotations[Annotation] = "trust me"
			return "FlinkStateSnapshot", target, keys{key}
		}, "is not a review stamp"},
		{"mac removed", func(m *metav1.ObjectMeta) (string, Reference, Keys) {
			var s Stamp
			_ = json.Unmarshal([]byte(m.Annotations[Annotation]), &s)
			s.MAC = ""
			b, _ := json.Marshal(s)
			m.Annotations[Annotation] = string(b)
			return "FlinkStateSnapshot", target, keys{key}
		}, "does not vouch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := signed(t, "FlinkStateSnapshot", target)
			kind, ref, ks := tc.mutate(m)
			_, err := Verify(ks, kind, m, ref)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A stamp made on UPDATE names the uid: it holds for that object only.
func TestUIDStamp(t *testing.T) {
	m := objMeta()
	m.UID = "uid-1"
	m.CreationTimestamp = metav1.NewTime(t0.Add(-24 * time.Hour)) // old object: the window does not apply
	v, err := Sign(key, "FlinkDeployment", m, target, "bob", t0)
	if err != nil {
		t.Fatal(err)
	}
	m.Annotations = map[string]string{Annotation: v}
	if _, err := Verify(keys{key}, "FlinkDeployment", m, target); err != nil {
		t.Fatal(err)
	}
	m.UID = "uid-2"
	if _, err := Verify(keys{key}, "FlinkDeployment", m, target); err == nil || !strings.Contains(err.Error(), "earlier object of the same name") {
		t.Errorf("stamp of another uid: %v", err)
	}
}

// A CREATE stamp is accepted within CreateWindow of the creation time, on
// either side (clock skew), and not beyond.
func TestCreateWindow(t *testing.T) {
	for _, tc := range []struct {
		created time.Duration
		ok      bool
	}{{0, true}, {-CreateWindow, true}, {CreateWindow, true}, {CreateWindow + time.Second, false}, {-CreateWindow - time.Second, false}} {
		m := signed(t, "FlinkStateSnapshot", target)
		m.CreationTimestamp = metav1.NewTime(t0.Add(tc.created))
		_, err := Verify(keys{key}, "FlinkStateSnapshot", m, target)
		if (err == nil) != tc.ok {
			t.Errorf("created at issued%+v: err %v, want ok=%v", tc.created, err, tc.ok)
		}
	}
	m := signed(t, "FlinkStateSnapshot", target)
	m.CreationTimestamp = metav1.Time{}
	if _, err := Verify(keys{key}, "FlinkStateSnapshot", m, target); err == nil {
		t.Error("CREATE stamp on an object without creationTimestamp accepted")
	}
}

func TestSignNeedsKeyAndName(t *testing.T) {
	if _, err := Sign(nil, "FlinkStateSnapshot", objMeta(), target, "bob", t0); err == nil {
		t.Error("signed without a key")
	}
	m := objMeta()
	m.Name = ""
	if _, err := Sign(key, "FlinkStateSnapshot", m, target, "bob", t0); err == nil {
		t.Error("signed an object without a name (generateName)")
	}
}
