// Package flink is the operator's client for flink.apache.org (see package
// clients for why it is not the generated clientset).
package flink

import (
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/flinkops/flink-operator/pkg/clients"
	flinkv1beta1 "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/typed/flink/v1beta1"
)

// Interface is what the operator calls; the generated fake clientset
// (pkg/generated/clientset/versioned/fake) implements it too.
type Interface interface {
	FlinkV1beta1() flinkv1beta1.FlinkV1beta1Interface
}

// Clientset holds the flink.apache.org/v1beta1 client.
type Clientset struct {
	flinkV1beta1 *flinkv1beta1.FlinkV1beta1Client
}

func (c *Clientset) FlinkV1beta1() flinkv1beta1.FlinkV1beta1Interface { return c.flinkV1beta1 }

// NewForConfig creates the client.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	return NewForConfigAndClient(c, nil)
}

// NewForConfigAndClient creates the client on httpClient (nil: one made
// from c).
func NewForConfigAndClient(c *rest.Config, httpClient *http.Client) (*Clientset, error) {
	cfg, hc, err := clients.Prepare(c, httpClient)
	if err != nil {
		return nil, err
	}
	v1beta1, err := flinkv1beta1.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &Clientset{flinkV1beta1: v1beta1}, nil
}
