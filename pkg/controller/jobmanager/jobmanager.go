// Package jobmanager says how to reach the JobManager of a FlinkDeployment
// (an application or a session cluster): which Flink version its REST API
// speaks, on which port, and with which client. The three controllers that
// talk to Flink (FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot) use
// this one rule, so that during an upgrade they all speak the dialect of the
// cluster that is running, not of the one the spec asks for.
//
// # The rule
//
// Only the live objects the FlinkDeployment controls count (a Deployment or
// Service of the right name owned by something else is ignored):
//
//   - Flink version: the flinkops.io/flink-version annotation of the live
//     JobManager Deployment (written by the FlinkDeployment controller from
//     the spec it built the Deployment for), else the flinkVersion of the
//     recorded spec (status.reconciliationStatus.lastReconciledSpec), else
//     spec.flinkVersion. An annotation that does not parse is ignored.
//   - REST port: the port named "rest" of the live <name>-rest Service, else
//     rest.port of the effective configuration, else 8081.
//   - Client: the operator's endpoints.Resolver (Service DNS name or pod IP)
//     with that port, the operator's HTTP client, and
//     kubernetes.operator.flink.client.timeout of the effective
//     configuration, and for the job submission calls (jar upload and
//     run) kubernetes.operator.job.submission.timeout.
//
// The live objects come from the informer caches the FlinkDeployment
// controller already keeps (Deployments and Services labelled
// type=flink-standalone-kubernetes): see Lookup.
package jobmanager

import (
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// AnnotationFlinkVersion on the JobManager Deployment records the Flink
// version the cluster was built for.
const AnnotationFlinkVersion = "flinkops.io/flink-version"

// Cluster is what is known of one Flink cluster.
type Cluster struct {
	// Deployment is the FlinkDeployment; required.
	Deployment *v1beta1.FlinkDeployment
	// JobManager and RESTService are the live JobManager Deployment and
	// <name>-rest Service, from informer caches; nil when absent.
	JobManager  *appsv1.Deployment
	RESTService *corev1.Service
	// Config is the effective configuration (operator configuration, the
	// cluster's flinkConfiguration, for a session job its own on top):
	// rest.port when the Service is missing, and the client timeout.
	Config config.Config
}

// WithObjects returns c with the live objects filled in.
func (c Cluster) WithObjects(o Objects) Cluster {
	c.JobManager, c.RESTService = o.JobManager, o.RESTService
	return c
}

// Endpoint is how to reach a cluster's JobManager.
type Endpoint struct {
	Cluster *v1beta1.FlinkDeployment
	// Version is the Flink version the running cluster speaks.
	Version flink.Version
	// Port is its REST port.
	Port int
	// Timeout bounds each REST call (kubernetes.operator.flink.client.timeout).
	Timeout time.Duration
	// SubmitTimeout bounds the job submission calls, jar upload and jar run
	// (kubernetes.operator.job.submission.timeout).
	SubmitTimeout time.Duration
}

// Resolve applies the rule (see the package documentation). It fails when
// no Flink version parses or a timeout is invalid.
func Resolve(c Cluster) (Endpoint, error) {
	dep := c.Deployment
	if dep == nil {
		return Endpoint{}, fmt.Errorf("jobmanager: no FlinkDeployment")
	}
	version, err := Version(dep, c.JobManager)
	if err != nil {
		return Endpoint{}, fmt.Errorf("flinkVersion of FlinkDeployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	timeout, err := c.Config.Duration(config.KeyFlinkClientTimeout)
	if err != nil {
		return Endpoint{}, err
	}
	submitTimeout, err := c.Config.Duration(config.KeyJobSubmissionTimeout)
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Cluster: dep, Version: version, Port: RESTPort(dep, c.RESTService, c.Config), Timeout: timeout, SubmitTimeout: submitTimeout}, nil
}

// Version is the Flink version dep's running cluster speaks, given its live
// JobManager Deployment (nil when absent). The error is flink.ParseVersion's,
// for the caller to put in context.
func Version(dep *v1beta1.FlinkDeployment, jm *appsv1.Deployment) (flink.Version, error) {
	if jm != nil && controlledBy(jm, dep) {
		if v, err := flink.ParseVersion(jm.Annotations[AnnotationFlinkVersion]); err == nil {
			return v, nil
		}
	}
	text := recordedVersion(dep)
	if text == "" {
		text = dep.Spec.FlinkVersion
	}
	return flink.ParseVersion(string(text))
}

// recordedVersion is the flinkVersion of lastReconciledSpec (upstream's
// current and legacy forms), "" when there is none or it does not decode.
func recordedVersion(dep *v1beta1.FlinkDeployment) v1beta1.FlinkVersion {
	rec, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](dep.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil || rec == nil {
		return ""
	}
	return rec.Spec.FlinkVersion
}

// RESTPort is the port of dep's REST API, given its live REST Service (nil
// when absent) and effective configuration.
func RESTPort(dep *v1beta1.FlinkDeployment, svc *corev1.Service, cfg config.Config) int {
	if svc != nil && controlledBy(svc, dep) {
		for _, p := range svc.Spec.Ports {
			if p.Name == cluster.RESTPortName && p.Port > 0 {
				return int(p.Port)
			}
		}
	}
	if cfg != nil {
		if p, ok, err := cfg.OptionalInt(config.FlinkRestPort); err == nil && ok && p > 0 {
			return p
		}
	}
	return int(cluster.DefaultRESTPort)
}

// controlledBy reports whether dep is the controller of obj (any UID when
// dep has none, as in tests).
func controlledBy(obj metav1.Object, dep *v1beta1.FlinkDeployment) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "FlinkDeployment" || ref.Name != dep.Name {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == v1beta1.GroupName && (dep.UID == "" || ref.UID == dep.UID)
}

// Dialer builds REST clients for endpoints.
type Dialer struct {
	// Endpoints resolves the base URL; default endpoints.Service.
	Endpoints endpoints.Resolver
	// HTTPClient carries the calls; nil means flink.New's own client.
	HTTPClient *http.Client
}

// Client is a REST client for ep.
func (d Dialer) Client(ep Endpoint) (*flink.Client, error) {
	if ep.Cluster == nil {
		return nil, fmt.Errorf("jobmanager: no cluster to reach")
	}
	resolve := d.Endpoints
	if resolve == nil {
		resolve = endpoints.Service
	}
	url, err := resolve(ep.Cluster, ep.Port)
	if err != nil {
		return nil, err
	}
	return flink.New(flink.Config{BaseURL: url, Version: ep.Version, HTTPClient: d.HTTPClient, Timeout: ep.Timeout, SubmitTimeout: ep.SubmitTimeout})
}

// Dial resolves c and builds its client.
func (d Dialer) Dial(c Cluster) (*flink.Client, error) {
	ep, err := Resolve(c)
	if err != nil {
		return nil, err
	}
	return d.Client(ep)
}

// EffectiveConfig layers a resource's flinkConfiguration over base (the
// operator's configuration, or a session cluster's effective one for its
// jobs). conf may be nil.
func EffectiveConfig(base config.Config, conf *v1beta1.Configuration) (config.Config, error) {
	values, err := conf.Values()
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Effective(base, values)
	return cfg, err
}
