package flink

import (
	"context"
)

// DashboardConfig is GET /config. The operator reads the running Flink
// version and revision from it.
type DashboardConfig struct {
	RefreshInterval int64             `json:"refresh-interval"`
	TimezoneName    string            `json:"timezone-name"`
	TimezoneOffset  int64             `json:"timezone-offset"`
	FlinkVersion    string            `json:"flink-version"`
	FlinkRevision   string            `json:"flink-revision"`
	Features        DashboardFeatures `json:"features"`
}

// DashboardFeatures are the web UI feature switches (web-rescale since 1.18).
type DashboardFeatures struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// ClusterOverview is GET /overview.
type ClusterOverview struct {
	TaskManagers        int    `json:"taskmanagers"`
	SlotsTotal          int    `json:"slots-total"`
	SlotsAvailable      int    `json:"slots-available"`
	JobsRunning         int    `json:"jobs-running"`
	JobsFinished        int    `json:"jobs-finished"`
	JobsCancelled       int    `json:"jobs-cancelled"`
	JobsFailed          int    `json:"jobs-failed"`
	FlinkVersion        string `json:"flink-version"`
	FlinkCommit         string `json:"flink-commit"`
	TaskManagersBlocked int    `json:"taskmanagers-blocked"`   // 1.16+
	SlotsFreeAndBlocked int    `json:"slots-free-and-blocked"` // 1.16+
}

// Config fetches GET /config.
func (c *Client) Config(ctx context.Context) (*DashboardConfig, error) {
	var out DashboardConfig
	if err := c.getJSON(ctx, "/config", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Overview fetches GET /overview.
func (c *Client) Overview(ctx context.Context) (*ClusterOverview, error) {
	var out ClusterOverview
	if err := c.getJSON(ctx, "/overview", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TaskManagers fetches GET /taskmanagers.
func (c *Client) TaskManagers(ctx context.Context) ([]TaskManager, error) {
	var out struct {
		TaskManagers []TaskManager `json:"taskmanagers"`
	}
	if err := c.getJSON(ctx, "/taskmanagers", nil, &out); err != nil {
		return nil, err
	}
	return out.TaskManagers, nil
}
