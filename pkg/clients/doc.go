// Package clients builds the operator's API clients: package kubernetes for
// the Kubernetes API groups it uses, package flink for flink.apache.org.
//
// They are the generated typed clients (pkg/generated) gathered without the
// generated clientsets' discovery client: client-go's discovery package
// imports client-go's scheme, which registers every API group Kubernetes
// serves (56) when the process starts, about 10 MiB of resident memory for
// types the operator never reads. The generated informers take these
// clients (hack/update-codegen.sh); the generated fake clientsets satisfy
// them in tests.
package clients

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Prepare returns the configuration and the shared HTTP client the typed
// clients of one clientset are built from, as a generated clientset's
// NewForConfig does: a default user agent, and one token bucket for all of
// them when QPS is set without a rate limiter.
func Prepare(c *rest.Config, httpClient *http.Client) (*rest.Config, *http.Client, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(&cfg); err != nil {
			return nil, nil, err
		}
	}
	return &cfg, httpClient, nil
}
