// Package validation holds the admission rules for FlinkDeployment,
// FlinkSessionJob and FlinkStateSnapshot that the validating webhook and the
// controllers share, so a spec the webhook admits is one the controllers
// accept, with the same message.
//
// The rules follow upstream's DefaultValidator and keep its
// messages verbatim, because users search for them; rules that are ours say
// what to change and name the key or field to change.
//
// Everything here is pure: functions take the objects (and the operator's
// configuration) and return an error. Looking the objects up (informer
// caches), authorizing cross-namespace references (SubjectAccessReview) and
// building the cluster objects (pkg/cluster) are the callers' business.
package validation
