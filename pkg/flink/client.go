package flink

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds each call unless Config.Timeout says otherwise. It
// matches the operator option kubernetes.operator.flink.client.timeout.
const DefaultTimeout = 10 * time.Second

// DefaultSubmitTimeout bounds jar upload and jar run, which move whole jars
// and run the user's main(); it matches
// kubernetes.operator.job.submission.timeout.
const DefaultSubmitTimeout = 10 * time.Minute

// Config configures a Client.
type Config struct {
	// BaseURL is the JobManager REST endpoint, e.g. "http://my-cluster-rest.ns:8081".
	// A path (for a proxy, Flink's rest.path) is kept and prefixed to every call.
	BaseURL string
	// Version is the Flink release the JobManager runs; it decides which
	// request fields are sent. Required.
	Version Version
	// HTTPClient sends the requests; nil means a dedicated client with
	// sane connection pooling. Its own Timeout, if any, also applies.
	HTTPClient *http.Client
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// SubmitTimeout bounds UploadJar and RunJar; 0 means DefaultSubmitTimeout.
	SubmitTimeout time.Duration
	// UserAgent is sent with every request; empty means "flink-operator".
	UserAgent string
}

// Client talks to one JobManager. It is safe for concurrent use.
type Client struct {
	base          *url.URL
	version       Version
	http          *http.Client
	timeout       time.Duration
	submitTimeout time.Duration
	userAgent     string
}

// New validates cfg and returns a Client. It does not contact Flink.
func New(cfg Config) (*Client, error) {
	if cfg.Version.IsZero() {
		return nil, fmt.Errorf("flink: Config.Version is required")
	}
	if cfg.Version.Before(MinSupportedVersion) {
		return nil, fmt.Errorf("flink: version %s is not supported (minimum %s)", cfg.Version, MinSupportedVersion)
	}
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil {
		return nil, fmt.Errorf("flink: invalid BaseURL %q: %w", cfg.BaseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("flink: invalid BaseURL %q: want http(s)://host[:port][/path]", cfg.BaseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{
		base:          u,
		version:       cfg.Version,
		http:          cfg.HTTPClient,
		timeout:       cfg.Timeout,
		submitTimeout: cfg.SubmitTimeout,
		userAgent:     cfg.UserAgent,
	}
	if c.http == nil {
		c.http = defaultHTTPClient()
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.submitTimeout <= 0 {
		c.submitTimeout = DefaultSubmitTimeout
	}
	if c.userAgent == "" {
		c.userAgent = "flink-operator"
	}
	return c, nil
}

// Version returns the Flink version the client was built for.
func (c *Client) Version() Version { return c.version }

// BaseURL returns the JobManager URL the client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// Timeout is the bound of each call but jar upload and run.
func (c *Client) Timeout() time.Duration { return c.timeout }

// SubmitTimeout is the bound of UploadJar and RunJar.
func (c *Client) SubmitTimeout() time.Duration { return c.submitTimeout }

// defaultHTTPClient keeps a modest idle pool per host: an operator talks to
// many JobManagers, each rarely, so large pools would only hold sockets.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	tr.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: tr}
}
