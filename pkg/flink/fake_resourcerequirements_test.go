package flink_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// A job's resource requirements are read and replaced through Flink's
// REST API: the defaults (lower 1, upper the job's parallelism), a PUT
// that the next GET reflects, Flink's checks on the body, an unknown job.
func TestJobResourceRequirements(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_20})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
	src, sink := fakejm.VertexID(0), fakejm.VertexID(1)
	got, err := c.JobResourceRequirements(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	want := flink.ResourceRequirements{
		src:  {Parallelism: flink.Parallelism{LowerBound: 1, UpperBound: 2}},
		sink: {Parallelism: flink.Parallelism{LowerBound: 1, UpperBound: 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults: got %+v, want %+v", got, want)
	}
	want[src] = flink.VertexResourceRequirements{Parallelism: flink.Parallelism{LowerBound: 1, UpperBound: 4}}
	if err := c.UpdateJobResourceRequirements(ctx, job, want); err != nil {
		t.Fatal(err)
	}
	if got, err := c.JobResourceRequirements(ctx, job); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after the PUT: got %+v, %v; want %+v", got, err, want)
	}
	bad := flink.ResourceRequirements{src: {Parallelism: flink.Parallelism{LowerBound: 3, UpperBound: 2}}, sink: want[sink]}
	if err := c.UpdateJobResourceRequirements(ctx, job, bad); !flink.IsBadRequest(err) {
		t.Errorf("lower > upper: %v, want a bad request", err)
	}
	if err := c.UpdateJobResourceRequirements(ctx, job, flink.ResourceRequirements{src: want[src]}); !flink.IsBadRequest(err) {
		t.Errorf("a vertex missing: %v, want a bad request", err)
	}
	if _, err := c.JobResourceRequirements(ctx, "0123456789abcdef0123456789abcdef"); !flink.IsNotFound(err) {
		t.Errorf("unknown job: %v", err)
	}
	if n := len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate)); n != 3 {
		t.Errorf("%d PUTs logged, want 3", n)
	}
}

// Before Flink 1.18 there is no such endpoint: the client says so without
// asking.
func TestJobResourceRequirementsUnsupported(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_17})
	job := jm.MustAddJob(fakejm.JobSpec{})
	if _, err := c.JobResourceRequirements(context.Background(), job); !flink.IsUnsupported(err) {
		t.Errorf("GET on 1.17: %v, want unsupported", err)
	}
	if err := c.UpdateJobResourceRequirements(context.Background(), job, flink.ResourceRequirements{}); !flink.IsUnsupported(err) {
		t.Errorf("PUT on 1.17: %v, want unsupported", err)
	}
	if n := len(jm.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
