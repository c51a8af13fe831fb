package validation

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// SessionJob checks a FlinkSessionJob, first error wins. cluster is its
// session FlinkDeployment (spec.deploymentName in the job's namespace), nil
// when it does not exist (yet): the job then waits for it, so, as upstream,
// the rules that need the cluster's configuration are skipped until it
// exists (the controller re-checks).
func SessionJob(job *v1beta1.FlinkSessionJob, cluster *v1beta1.FlinkDeployment, operator config.Config) (*Result, error) {
	spec := &job.Spec
	if strings.TrimSpace(spec.DeploymentName) == "" {
		return nil, errors.New("spec.deploymentName is required: the name of the session cluster FlinkDeployment (in the same namespace) to run the job on")
	}
	if err := DeploymentName(spec.DeploymentName); err != nil {
		return nil, err
	}
	if spec.Job == nil {
		return nil, errors.New("The job spec should not be empty")
	}
	last, err := LastReconciledSessionJobSpec(&job.Status)
	if err != nil {
		last = nil // see Deployment
	}
	if last != nil && last.DeploymentName != spec.DeploymentName {
		return nil, errors.New("The deploymentName can't be changed")
	}
	if err := SessionJarURI(spec.Job.JarURI); err != nil {
		return nil, err
	}
	// The artifact options apply as configured for this job: the
	// operator's (they are operator-wide), with the cluster's and the
	// job's flinkConfiguration on top should the registry let a resource
	// set them. A configuration error is reported below, with the cluster.
	jarCfg := operator
	if c, _, err := SessionJobConfig(operator, cluster, spec); err == nil {
		jarCfg = c
	}
	if err := SessionJarAllowed(spec.Job.JarURI, jarCfg); err != nil {
		return nil, err
	}
	if err := jobEnums(spec.Job); err != nil {
		return nil, err
	}
	// Upstream checks it only once the cluster exists; it needs nothing
	// from the cluster, so here it is checked at once. A session job's
	// parallelism is its own: the cluster's TaskManager replicas never
	// decide it.
	if err := jobParallelism(spec.Job, false); err != nil {
		return nil, err
	}
	if cluster == nil {
		return &Result{}, nil
	}
	if cluster.Spec.Job != nil {
		return nil, errors.New("Can not submit session job to application cluster")
	}
	cfg, warnings, err := SessionJobConfig(operator, cluster, spec)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Warnings: warnings}
	if v, err := flink.ParseVersion(string(cluster.Spec.FlinkVersion)); err == nil {
		res.Version = v
	}
	var lastJob *v1beta1.JobSpec
	if last != nil {
		lastJob = last.Job
	}
	if err := jobState(spec.Job, lastJob, cfg); err != nil {
		return nil, err
	}
	return res, nil
}

// SessionJobUpdate checks an update of a session job against the previous
// object: deploymentName is immutable (a job cannot move to another cluster
// with its state; delete it and create it on the other one). Upstream only
// compares with the last reconciled spec, which lets a change slip through
// before the first deployment; comparing the objects closes that gap.
func SessionJobUpdate(old, cur *v1beta1.FlinkSessionJob) error {
	if old.Spec.DeploymentName != cur.Spec.DeploymentName {
		return errors.New("The deploymentName can't be changed")
	}
	return nil
}

// SessionJarURI checks a session job's jarURI: the operator fetches the jar
// and uploads it through Flink's REST API, so the URI must be one it can
// read, http(s):// or file://. Empty is left to the controller (a job whose
// classes are already on the cluster's classpath needs no jar).
func SessionJarURI(uri string) error {
	if strings.TrimSpace(uri) == "" {
		return nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("spec.job.jarURI %q is not a valid URI: use an http://, https:// or file:// URI", uri)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "file":
		return nil
	case "local":
		return fmt.Errorf("spec.job.jarURI %q: local:// cannot be used by a session job: a session job's jar is uploaded through Flink's REST API, and local:// names a file inside a cluster's image that the operator cannot upload; serve the jar over http(s):// or give a file:// path the operator can read", uri)
	case "":
		return fmt.Errorf("spec.job.jarURI %q has no scheme: use an http://, https:// or file:// URI", uri)
	default:
		return fmt.Errorf("spec.job.jarURI %q: scheme %s:// is not supported for session jobs, whose jar the operator uploads through Flink's REST API; use an http://, https:// or file:// URI", uri, u.Scheme)
	}
}

// SessionJarAllowed applies the user.artifacts options of cfg to a session
// job's jarURI, as upstream's DefaultValidator.validateJarURI and with its
// messages: the scheme must be in kubernetes.operator.user.artifacts.
// allowed-schemes (default https only; file:// too must be listed), and
// with kubernetes.operator.user.artifacts.disallow-restricted-hosts (the
// default) an http(s) host must not be a restricted address
// (RestrictedAddr).
//
// Unlike upstream, no name is resolved here (the rules stay pure, and a
// lookup now proves nothing about the address a download connects to
// later): an IP literal or a localhost name is refused at once, any other
// name when the operator connects, where every resolved address is
// checked (pkg/controller/sessionjob). Empty is left to the controller.
func SessionJarAllowed(uri string, cfg config.Config) error {
	if strings.TrimSpace(uri) == "" {
		return nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("jarURI is not a valid URI: %v", err)
	}
	if u.Scheme == "" {
		return errors.New("jarURI must include a scheme")
	}
	if err := JarSchemeAllowed(u.Scheme, cfg.List(config.KeyUserArtifactsAllowedSchemes)); err != nil {
		return err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil
	}
	restricted, err := cfg.Bool(config.KeyUserArtifactsDisallowRestrictedHosts)
	if err != nil || !restricted {
		return err
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("jarURI must include a host for http/https schemes")
	}
	if RestrictedHostLiteral(host) {
		return fmt.Errorf("jarURI host '%s' resolves to a restricted address", host)
	}
	return nil
}

// JarSchemeAllowed says whether scheme is in allowed (the value of
// kubernetes.operator.user.artifacts.allowed-schemes), ignoring case, with
// upstream's message when it is not.
func JarSchemeAllowed(scheme string, allowed []string) error {
	norm := make([]string, 0, len(allowed))
	for _, a := range allowed {
		norm = append(norm, strings.ToLower(a))
	}
	slices.Sort(norm)
	norm = slices.Compact(norm)
	if slices.Contains(norm, strings.ToLower(scheme)) {
		return nil
	}
	return fmt.Errorf("jarURI scheme '%s' is not in the allowlist [%s]. Configure '%s' to extend the allowlist.",
		scheme, strings.Join(norm, ", "), config.KeyUserArtifactsAllowedSchemes)
}

// RestrictedHostLiteral: host (as url.URL.Hostname gives it) is an IP
// address RestrictedAddr refuses, or a localhost name (RFC 6761: always
// loopback). Other names are not resolved here.
func RestrictedHostLiteral(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && RestrictedAddr(ip)
}

// RestrictedAddr is an address kubernetes.operator.user.artifacts.
// disallow-restricted-hosts keeps the operator from fetching jars from:
// loopback, link-local (169.254.169.254, the cloud metadata services,
// among them), private (RFC 1918, IPv6 unique local fc00::/7 and the old
// site-local fec0::/10), unspecified (and 0.0.0.0/8, "this network") and
// multicast, IPv4-mapped IPv6 forms included. Upstream's list (Java's
// loopback, link-local, site-local, any-local and multicast), plus the
// IPv6 unique local range.
func RestrictedAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsPrivate() || ip.IsUnspecified() ||
		(ip.Is4() && ip.As4()[0] == 0) || siteLocal6.Contains(ip)
}

var siteLocal6 = netip.MustParsePrefix("fec0::/10")
