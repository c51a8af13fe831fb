// Package webhook is the operator's validating admission webhook: an HTTPS
// server that answers admission.k8s.io/v1 AdmissionReviews for
// FlinkDeployment, FlinkSessionJob and FlinkStateSnapshot on CREATE and
// UPDATE with the rules of pkg/validation (plus what pkg/cluster refuses to
// build), so a user learns at `kubectl apply` what the controllers would
// otherwise only report later in a status.
//
// What the rules need beyond the object (a snapshot's target, a session
// job's cluster) comes from the operator's informer caches through Lookup;
// a snapshot that refers to a job in another namespace is also authorized
// here, with a SubjectAccessReview for the requesting user. The mutating
// step (MutatePath, stamp.go) then stamps the object with an HMAC
// (pkg/reviewstamp) that the controllers verify before acting on the
// reference, so an object the webhook never reviewed is never acted on
// across namespaces; ReviewKey keeps the HMAC key in a Secret. It also
// gives a new FlinkStateSnapshot its labels and finalizer
// (snapshotmeta.go), saving the snapshot controller that write.
//
// The serving certificate comes from files (for example mounted from a
// cert-manager Secret) that are re-read when they change, or is generated
// and rotated by the operator itself into a Secret, with the CA patched
// into the ValidatingWebhookConfiguration. Either way the certificate is
// chosen at each TLS handshake, so a new one is served without a restart.
// The self-managed mode patches the CA into the Validating- and
// MutatingWebhookConfiguration.
package webhook
