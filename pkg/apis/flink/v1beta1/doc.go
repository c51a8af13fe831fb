// Package v1beta1 holds the flink.apache.org/v1beta1 API: FlinkDeployment,
// FlinkSessionJob and FlinkStateSnapshot. The JSON shape is a drop-in match for
// the Apache Flink Kubernetes Operator's resources; fields this project adds are
// marked "[ours]" in their comments and listed in docs/compatibility.md.
//
// +k8s:deepcopy-gen=package
// +groupName=flink.apache.org
package v1beta1
