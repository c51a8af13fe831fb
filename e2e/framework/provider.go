package framework

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// FlinkImage is the image that runs Flink version (a pinned version such
// as "2.3.0") with the test job: locally flink:<major.minor>, which the node
// agent runs as JVMs with the test job on their classpath; on kind the
// test-job image e2e/kind/up.sh built, from FLINKOP_E2E_FLINK_IMAGES.
func FlinkImage(t *testing.T, version string) string {
	t.Helper()
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("Flink version %q", version)
	}
	if !Kind() {
		return "flink:" + parts[0] + "." + parts[1]
	}
	for _, kv := range strings.Split(os.Getenv(EnvFlinkImages), ",") {
		if v, image, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && v == version {
			return image
		}
	}
	t.Fatalf("%s has no image for Flink %s", EnvFlinkImages, version)
	return ""
}

// PodTemplateYAML is the spec.podTemplate a scenario's FlinkDeployment
// needs, indented for the spec level: nothing locally (the JVMs see the
// host's files); on kind a hostPath volume of Env.Base, mounted at the same
// path in the Flink container, so checkpoint and savepoint paths mean the
// same on the host and in the pods.
func (e *Env) PodTemplateYAML() string {
	if !Kind() {
		return ""
	}
	return fmt.Sprintf(`  podTemplate:
    spec:
      containers:
        - name: flink-main-container
          volumeMounts:
            - {name: e2e-data, mountPath: %[1]s}
      volumes:
        - name: e2e-data
          hostPath: {path: %[1]s, type: Directory}
`, e.Base)
}

// ServeHTTP serves h to the cluster (to pods and to the operator) and
// returns its base URL: on 127.0.0.1 locally; on kind on all interfaces,
// reached at FLINKOP_E2E_HOST_ADDRESS. Stopped by t.Cleanup.
func ServeHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	listen, host := "127.0.0.1:0", "127.0.0.1"
	if Kind() {
		if host = os.Getenv(EnvHostAddress); host == "" {
			t.Fatalf("%s=kind needs %s, the address pods reach the test at", EnvProvider, EnvHostAddress)
		}
		listen = ":0"
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return fmt.Sprintf("http://%s:%d", host, l.Addr().(*net.TCPAddr).Port)
}
