package jobmanager

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

const (
	ns  = "ns"
	uid = types.UID("uid-1")
)

// flinkDeployment is "job" in ns: spec.flinkVersion spec, and recorded (when
// not "") as the flinkVersion of lastReconciledSpec.
func flinkDeployment(spec, recorded string) *v1beta1.FlinkDeployment {
	d := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns, UID: uid},
		Spec:       v1beta1.FlinkDeploymentSpec{FlinkVersion: v1beta1.FlinkVersion(spec)},
	}
	if recorded != "" {
		d.Status.ReconciliationStatus.LastReconciledSpec = fmt.Sprintf(
			`{"spec":{"flinkVersion":%q},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`, recorded)
	}
	return d
}

func controllerRef(name string, id types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: name, UID: id, Controller: new(true)}}
}

// jobManager is the live JobManager Deployment of "job", annotated with
// version (none when "").
func jobManager(version string, owners []metav1.OwnerReference) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: cluster.JobManagerDeploymentName("job"), Namespace: ns, OwnerReferences: owners,
		Labels: cluster.CommonLabels(cluster.Standalone, "job"),
	}}
	if version != "" {
		d.Annotations = map[string]string{AnnotationFlinkVersion: version}
	}
	return d
}

// restService is the live REST Service of "job" with the given named ports.
func restService(owners []metav1.OwnerReference, ports map[string]int32) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: cluster.RESTServiceName("job"), Namespace: ns, OwnerReferences: owners,
		Labels: cluster.CommonLabels(cluster.Standalone, "job"),
	}}
	for name, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: name, Port: p})
	}
	return s
}

func TestVersion(t *testing.T) {
	owned := controllerRef("job", uid)
	cases := []struct {
		name           string
		spec, recorded string
		jm             *appsv1.Deployment
		want           flink.Version
		wantErr        bool
	}{
		{name: "mid upgrade: the running JobManager's annotation wins over the recorded and the new spec",
			spec: "v1_20", recorded: "v1_20", jm: jobManager("v1_19", owned), want: flink.V1_19},
		{name: "downgrade in progress: the annotation wins too",
			spec: "v1_18", recorded: "v1_18", jm: jobManager("v1_20", owned), want: flink.V1_20},
		{name: "annotation in another spelling",
			spec: "v1_20", jm: jobManager("1.19.2", owned), want: flink.V1_19},
		{name: "no JobManager Deployment: the recorded spec",
			spec: "v1_20", recorded: "v1_19", want: flink.V1_19},
		{name: "JobManager Deployment without the annotation (built before it existed): the recorded spec",
			spec: "v1_20", recorded: "v1_19", jm: jobManager("", owned), want: flink.V1_19},
		{name: "unparsable annotation is ignored",
			spec: "v1_20", recorded: "v1_18", jm: jobManager("latest", owned), want: flink.V1_18},
		{name: "a Deployment of that name another FlinkDeployment controls is ignored",
			spec: "v1_20", recorded: "v1_18", jm: jobManager("v1_16", controllerRef("other", uid)), want: flink.V1_18},
		{name: "a Deployment controlled by an earlier FlinkDeployment of the same name (other UID) is ignored",
			spec: "v1_20", recorded: "v1_18", jm: jobManager("v1_16", controllerRef("job", "uid-0")), want: flink.V1_18},
		{name: "a Deployment nobody controls is ignored",
			spec: "v1_20", recorded: "v1_18", jm: jobManager("v1_16", nil), want: flink.V1_18},
		{name: "never deployed: the spec",
			spec: "v1_17", want: flink.V1_17},
		{name: "nothing parses",
			spec: "x", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Version(flinkDeployment(tc.spec, tc.recorded), tc.jm)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Version = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestVersionLegacyLastReconciledSpec(t *testing.T) {
	// Upstream's older lastReconciledSpec is the bare spec.
	d := flinkDeployment("v1_20", "")
	d.Status.ReconciliationStatus.LastReconciledSpec = `{"flinkVersion":"v1_18","image":"flink:1.18"}`
	if got, err := Version(d, nil); err != nil || got != flink.V1_18 {
		t.Errorf("Version = %v, %v; want 1.18", got, err)
	}
	d.Status.ReconciliationStatus.LastReconciledSpec = `{not json`
	if got, err := Version(d, nil); err != nil || got != flink.V1_20 {
		t.Errorf("undecodable lastReconciledSpec: Version = %v, %v; want the spec's 1.20", got, err)
	}
}

func TestRESTPort(t *testing.T) {
	owned := controllerRef("job", uid)
	withPort := config.Config{config.FlinkRestPort: "9091"}
	cases := []struct {
		name string
		svc  *corev1.Service
		cfg  config.Config
		want int
	}{
		{name: "the live Service's rest port wins over the configuration",
			svc: restService(owned, map[string]int32{"rest": 8088}), cfg: withPort, want: 8088},
		{name: "other ports of the Service do not count",
			svc: restService(owned, map[string]int32{"http": 8088}), cfg: withPort, want: 9091},
		{name: "no Service: rest.port",
			cfg: withPort, want: 9091},
		{name: "a Service another FlinkDeployment controls is ignored",
			svc: restService(controllerRef("other", uid), map[string]int32{"rest": 8088}), cfg: withPort, want: 9091},
		{name: "no Service, no rest.port: 8081",
			cfg: config.Config{}, want: 8081},
		{name: "unparsable rest.port: 8081",
			cfg: config.Config{config.FlinkRestPort: "eighty"}, want: 8081},
		{name: "nil configuration: 8081", want: 8081},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RESTPort(flinkDeployment("v1_20", ""), tc.svc, tc.cfg); got != tc.want {
				t.Errorf("RESTPort = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	owned := controllerRef("job", uid)
	dep := flinkDeployment("v1_20", "v1_20")
	cfg := config.Defaults()
	cfg[config.KeyFlinkClientTimeout] = "3 s"
	cfg[config.FlinkRestPort] = "9091"

	ep, err := Resolve(Cluster{Deployment: dep, JobManager: jobManager("v1_19", owned),
		RESTService: restService(owned, map[string]int32{"rest": 8088}), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Endpoint{Cluster: dep, Version: flink.V1_19, Port: 8088, Timeout: 3 * time.Second, SubmitTimeout: 10 * time.Minute}); ep != want {
		t.Errorf("Resolve = %+v, want %+v", ep, want)
	}

	// Missing objects: the recorded spec and the configuration.
	ep, err = Resolve(Cluster{Deployment: dep, Config: cfg}.WithObjects(Objects{}))
	if err != nil || ep.Version != flink.V1_20 || ep.Port != 9091 {
		t.Errorf("Resolve without objects = %+v, %v; want 1.20 on 9091", ep, err)
	}

	if _, err := Resolve(Cluster{Deployment: flinkDeployment("nope", ""), Config: cfg}); err == nil ||
		!strings.Contains(err.Error(), "flinkVersion of FlinkDeployment ns/job") {
		t.Errorf("bad version: err %v", err)
	}
	bad := config.Defaults()
	bad[config.KeyFlinkClientTimeout] = "soon"
	if _, err := Resolve(Cluster{Deployment: dep, Config: bad}); err == nil {
		t.Error("bad client timeout: want an error")
	}
	if _, err := Resolve(Cluster{Config: cfg}); err == nil {
		t.Error("no FlinkDeployment: want an error")
	}
	bad = config.Defaults()
	bad[config.KeyJobSubmissionTimeout] = "later"
	if _, err := Resolve(Cluster{Deployment: dep, Config: bad}); err == nil {
		t.Error("bad submission timeout: want an error")
	}
}

// kubernetes.operator.job.submission.timeout bounds the submission calls
// (jar upload and run) of the clients Dial builds, 10 min by default, and
// a resource's own value (its effective configuration) wins; the other
// calls keep the client timeout.
func TestDialSubmissionTimeout(t *testing.T) {
	d := Dialer{Endpoints: func(c *v1beta1.FlinkDeployment, port int) (string, error) {
		return "http://" + c.Name + ".example:" + fmt.Sprint(port), nil
	}}
	dep := flinkDeployment("v1_20", "")
	for _, tc := range []struct {
		name  string
		value string // "" = unset
		want  time.Duration
	}{
		{name: "default", want: 10 * time.Minute},
		{name: "per resource", value: "90 s", want: 90 * time.Second},
		{name: "Flink duration syntax", value: "2min", want: 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			operator := config.Defaults()
			cfg, err := EffectiveConfig(operator, nil)
			if tc.value != "" {
				cfg, err = EffectiveConfig(operator, v1beta1.NewConfiguration(map[string]string{config.KeyJobSubmissionTimeout: tc.value}))
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := d.Dial(Cluster{Deployment: dep, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if c.SubmitTimeout() != tc.want || c.Timeout() != flink.DefaultTimeout {
				t.Errorf("submission timeout %v, client timeout %v; want %v and %v", c.SubmitTimeout(), c.Timeout(), tc.want, flink.DefaultTimeout)
			}
		})
	}
}

func TestDialer(t *testing.T) {
	dep := flinkDeployment("v1_20", "")
	var gotPort int
	d := Dialer{Endpoints: func(c *v1beta1.FlinkDeployment, port int) (string, error) {
		gotPort = port
		return "http://" + c.Name + ".example:" + fmt.Sprint(port), nil
	}}
	c, err := d.Client(Endpoint{Cluster: dep, Version: flink.V1_18, Port: 8088})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() != flink.V1_18 || gotPort != 8088 {
		t.Errorf("client version %v, resolver asked for port %d", c.Version(), gotPort)
	}

	// Dial = Resolve + Client.
	c, err = d.Dial(Cluster{Deployment: dep, JobManager: jobManager("v1_17", controllerRef("job", uid)), Config: config.Defaults()})
	if err != nil || c.Version() != flink.V1_17 || gotPort != 8081 {
		t.Errorf("Dial: version %v, port %d, err %v", c.Version(), gotPort, err)
	}

	if _, err := (Dialer{Endpoints: func(*v1beta1.FlinkDeployment, int) (string, error) {
		return "", errors.New("no ready JobManager pod")
	}}).Client(Endpoint{Cluster: dep, Version: flink.V1_20, Port: 8081}); err == nil {
		t.Error("resolver error: want it returned")
	}
	if _, err := d.Client(Endpoint{Version: flink.V1_20, Port: 8081}); err == nil {
		t.Error("no cluster: want an error")
	}
	// The default resolver is the Service's DNS name.
	if _, err := (Dialer{}).Client(Endpoint{Cluster: dep, Version: flink.V1_20, Port: 8081}); err != nil {
		t.Errorf("default resolver: %v", err)
	}
}

func TestLookup(t *testing.T) {
	owned := controllerRef("job", uid)
	jm, svc := jobManager("v1_19", owned), restService(owned, map[string]int32{"rest": 8088})
	other := jobManager("v1_18", nil)
	other.Namespace = "elsewhere"

	for _, watched := range [][]string{{""}, {ns, "elsewhere"}, {ns}} {
		t.Run(strings.Join(watched, ","), func(t *testing.T) {
			kube := kubefake.NewSimpleClientset()
			factories := map[string]kubeinformers.SharedInformerFactory{}
			for _, w := range watched {
				factories[w] = kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(w))
			}
			l := NewLookup(factories)
			if l.HasSynced() {
				t.Error("HasSynced before the informers ran")
			}
			for w, f := range factories {
				add := func(obj metav1.Object, store interface{ Add(any) error }) {
					if w == "" || w == obj.GetNamespace() {
						if err := store.Add(obj); err != nil {
							t.Fatal(err)
						}
					}
				}
				add(jm, f.Apps().V1().Deployments().Informer().GetIndexer())
				add(svc, f.Core().V1().Services().Informer().GetIndexer())
				add(other, f.Apps().V1().Deployments().Informer().GetIndexer())
			}

			got, err := l.Objects(flinkDeployment("v1_20", ""))
			if err != nil || got.JobManager != jm || got.RESTService != svc {
				t.Errorf("Objects = %+v, %v; want the JobManager Deployment and REST Service", got, err)
			}
			elsewhere := flinkDeployment("v1_20", "")
			elsewhere.Namespace = "elsewhere"
			got, err = l.Objects(elsewhere)
			wantJM := other
			if len(watched) == 1 && watched[0] == ns {
				wantJM = nil // not watched
			}
			if err != nil || got.JobManager != wantJM || got.RESTService != nil {
				t.Errorf("Objects(elsewhere) = %+v, %v; want JobManager %v and no Service", got, err, wantJM)
			}
			missing := flinkDeployment("v1_20", "")
			missing.Name = "absent"
			if got, err := l.Objects(missing); err != nil || got != (Objects{}) {
				t.Errorf("Objects(absent) = %+v, %v; want none", got, err)
			}
		})
	}

	if got, err := NoObjects.Objects(flinkDeployment("v1_20", "")); err != nil || got != (Objects{}) || !NoObjects.HasSynced() {
		t.Errorf("NoObjects = %+v, %v", got, err)
	}
}

func TestEffectiveConfig(t *testing.T) {
	const dirKey = "execution.checkpointing.savepoint-dir"
	base := config.Config{config.FlinkRestPort: "8081", dirKey: "s3://operator"}
	cluster, err := EffectiveConfig(base, v1beta1.NewConfiguration(map[string]string{config.FlinkRestPort: "9091", dirKey: "s3://cluster"}))
	if err != nil {
		t.Fatal(err)
	}
	job, err := EffectiveConfig(cluster, v1beta1.NewConfiguration(map[string]string{dirKey: "s3://job"}))
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := job.OptionalInt(config.FlinkRestPort); p != 9091 {
		t.Errorf("rest.port %d, want the cluster's 9091", p)
	}
	if dir, _ := job.Raw(dirKey); dir != "s3://job" {
		t.Errorf("savepoint dir %q, want the job's", dir)
	}
	if base[config.FlinkRestPort] != "8081" {
		t.Error("base was modified")
	}
	if same, err := EffectiveConfig(base, nil); err != nil || same[config.FlinkRestPort] != "8081" {
		t.Errorf("nil configuration: %v, %v", same, err)
	}
	if _, err := EffectiveConfig(base, &v1beta1.Configuration{Raw: []byte(`[1]`)}); err == nil {
		t.Error("undecodable configuration: want an error")
	}
}
