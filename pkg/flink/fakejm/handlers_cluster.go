package fakejm

import (
	"fmt"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Cluster-level endpoints: /config, /overview, /taskmanagers.

func (s *Server) flinkVersionString() string {
	return fmt.Sprintf("%d.%d.0", s.opts.Version.Major, s.opts.Version.Minor)
}

func (s *Server) getConfig(*inbound) reply {
	features := map[string]any{"web-submit": !s.opts.DisableWebSubmit, "web-cancel": true, "web-history": false}
	if s.opts.Version.AtLeast(flink.V1_18) {
		features["web-rescale"] = false
	}
	return okReply(map[string]any{
		"refresh-interval": 3000,
		"timezone-name":    "Coordinated Universal Time",
		"timezone-offset":  0,
		"flink-version":    s.flinkVersionString(),
		"flink-revision":   "fakejm @ 2025-01-01T00:00:00+01:00",
		"features":         features,
	})
}

func (s *Server) getOverview(*inbound) reply {
	counts := map[flink.JobStatus]int{}
	usedSlots := 0
	for _, j := range s.jobs {
		counts[j.state]++
		if !j.state.IsTerminal() {
			usedSlots += j.parallelism
		}
	}
	total := s.opts.TaskManagers * s.opts.SlotsPerTaskManager
	m := map[string]any{
		"taskmanagers":    s.opts.TaskManagers,
		"slots-total":     total,
		"slots-available": max(total-usedSlots, 0),
		"jobs-running":    len(s.jobs) - counts[flink.JobFinished] - counts[flink.JobCanceled] - counts[flink.JobFailed],
		"jobs-finished":   counts[flink.JobFinished],
		"jobs-cancelled":  counts[flink.JobCanceled],
		"jobs-failed":     counts[flink.JobFailed],
		"flink-version":   s.flinkVersionString(),
		"flink-commit":    "fakejm",
	}
	if s.opts.Version.AtLeast(flink.V1_16) {
		m["taskmanagers-blocked"] = 0
		m["slots-free-and-blocked"] = 0
	}
	return okReply(m)
}

func (s *Server) getTaskManagers(*inbound) reply {
	const mib = 1 << 20
	tms := make([]any, 0, s.opts.TaskManagers)
	slots := s.opts.SlotsPerTaskManager
	resource := map[string]any{
		"cpuCores": float64(slots), "taskHeapMemory": 384, "taskOffHeapMemory": 0,
		"managedMemory": 512, "networkMemory": 128, "extendedResources": map[string]any{},
	}
	for i := 0; i < s.opts.TaskManagers; i++ {
		tms = append(tms, map[string]any{
			"id":                     fmt.Sprintf("127.0.0.1:%d-%06x", 40000+i, i+1),
			"path":                   fmt.Sprintf("pekko.tcp://flink@127.0.0.1:6122/user/rpc/taskmanager_%d", i),
			"dataPort":               6121,
			"jmxPort":                -1,
			"timeSinceLastHeartbeat": s.now().UnixMilli(),
			"slotsNumber":            slots,
			"freeSlots":              slots,
			"totalResource":          resource,
			"freeResource":           resource,
			"hardware": map[string]any{
				"cpuCores": 2, "physicalMemory": int64(24) << 30, "freeMemory": int64(512) * mib, "managedMemory": int64(512) * mib,
			},
			"memoryConfiguration": map[string]any{
				"frameworkHeap": 128 * mib, "taskHeap": 384 * mib, "frameworkOffHeap": 128 * mib, "taskOffHeap": 0,
				"networkMemory": 128 * mib, "managedMemory": 512 * mib, "jvmMetaspace": 256 * mib,
				"jvmOverhead": 192 * mib, "totalFlinkMemory": 1280 * mib, "totalProcessMemory": 1728 * mib,
			},
			"blocked": false,
		})
	}
	return okReply(map[string]any{"taskmanagers": tms})
}
