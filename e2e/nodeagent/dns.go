package nodeagent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ClusterDomain is the DNS domain of the local cluster's services.
const ClusterDomain = "cluster.local"

// Endpoint is what name resolution needs to know of a pod the agent runs.
type Endpoint struct {
	Namespace, Name string
	Labels          map[string]string
	Hostname        string // spec.hostname, else the pod name
	Subdomain       string // spec.subdomain
	IP              string
	// Ready is the pod's Ready condition as the agent computes it.
	Ready bool
	// Terminating pods (deletionTimestamp set) are never resolved.
	Terminating bool
	// Seq orders pods by when the agent started them; the newest wins when a
	// name matches several pods.
	Seq int64
}

// podHostname is the pod's hostname as the kubelet gives it: spec.hostname,
// else the pod name cut to 63 characters (a hostname's limit; trailing '-'
// and '.' dropped).
func podHostname(pod *corev1.Pod) string {
	if h := pod.Spec.Hostname; h != "" {
		return h
	}
	h := pod.Name
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// containerHostname is what a container of the pod sees as its hostname:
// podHostname, or with setHostnameAsFQDN and a subdomain the FQDN
// <hostname>.<subdomain>.<ns>.svc.cluster.local, as the kubelet sets it.
func containerHostname(pod *corev1.Pod) string {
	h := podHostname(pod)
	if pod.Spec.Subdomain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
		return fmt.Sprintf("%s.%s.%s.svc.%s", h, pod.Spec.Subdomain, pod.Namespace, ClusterDomain)
	}
	return h
}

// HostsFile renders the hosts file of pod self, the agent's stand-in for
// cluster DNS (each JVM reads it through -Djdk.net.hosts.file):
//
//   - localhost, the pod's hostname (and, with a subdomain, its FQDN) and the
//     machine's hostname map to the pod's own IP, as inside a container;
//   - every Service with a selector maps to the IP of a matching pod: a ready
//     one, or for a headless Service (or one publishing not-ready
//     addresses, like Flink's RPC Service) any running one, the newest
//     winning. The names are <svc>.<ns>, <svc>.<ns>.svc and
//     <svc>.<ns>.svc.cluster.local, plus <svc> in the pod's own namespace;
//   - pods whose subdomain names a headless Service get
//     <hostname>.<svc>.<ns>.svc[.cluster.local].
//
// Services without a matching pod have no entry: a lookup fails, and the JVM
// retries (the agent starts JVMs with a one-second address cache).
func HostsFile(self Endpoint, machineHostname string, pods []Endpoint, services []*corev1.Service) []byte {
	var b bytes.Buffer
	own := []string{"localhost"}
	if self.Hostname != "" {
		own = append(own, self.Hostname)
		if self.Subdomain != "" {
			own = append(own, fmt.Sprintf("%s.%s.%s.svc.%s", self.Hostname, self.Subdomain, self.Namespace, ClusterDomain))
		}
	}
	if machineHostname != "" && !slices.Contains(own, machineHostname) {
		own = append(own, machineHostname)
	}
	fmt.Fprintf(&b, "%s %s\n", self.IP, strings.Join(own, " "))

	svcs := slices.Clone(services)
	slices.SortFunc(svcs, func(a, b *corev1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, svc := range svcs {
		if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
		notReadyOK := headless || svc.Spec.PublishNotReadyAddresses
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var best *Endpoint
		for i := range pods {
			p := &pods[i]
			if p.Namespace != svc.Namespace || p.IP == "" || p.Terminating || (!p.Ready && !notReadyOK) ||
				!sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if best == nil || p.Seq > best.Seq {
				best = p
			}
			if headless && p.Subdomain == svc.Name && p.Hostname != "" {
				fmt.Fprintf(&b, "%s %s.%s.%s.svc %s.%s.%s.svc.%s\n", p.IP,
					p.Hostname, svc.Name, svc.Namespace, p.Hostname, svc.Name, svc.Namespace, ClusterDomain)
			}
		}
		if best == nil {
			continue
		}
		names := []string{svc.Name + "." + svc.Namespace, svc.Name + "." + svc.Namespace + ".svc",
			svc.Name + "." + svc.Namespace + ".svc." + ClusterDomain}
		if svc.Namespace == self.Namespace {
			names = append([]string{svc.Name}, names...)
		}
		fmt.Fprintf(&b, "%s %s\n", best.IP, strings.Join(names, " "))
	}
	return b.Bytes()
}

// writeFileIfChanged replaces path with data (atomically, by rename) unless
// it holds data already. It reports whether it wrote.
func writeFileIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	// A temporary file of its own per writer: the DNS loop and a starting
	// pod may write the same file at once.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return false, err
	}
	return true, nil
}
