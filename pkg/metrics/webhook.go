package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var webhookRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "flink_operator", Name: "webhook_requests_total",
	Help: "Admission requests the webhook answered, by step (validate, mutate), operation, kind and whether it allowed them.",
}, []string{"step", "operation", "kind", "allowed"})

func init() {
	Registry.MustRegister(webhookRequests)
}

// WebhookRequest counts one admission request the webhook answered. It
// shows what the API server sends: the webhook configurations' match
// conditions keep updates that leave the spec alone away from the webhook.
func WebhookRequest(step, operation, kind string, allowed bool) {
	webhookRequests.WithLabelValues(step, operation, kind, strconv.FormatBool(allowed)).Inc()
}
