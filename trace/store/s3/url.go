package s3

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// URLForm documents the accepted S3 store URL.
const URLForm = "s3://BUCKET[/PREFIX][?endpoint=URL&path_style=true|false&region=REGION&part_size=BYTES]"

// ParseURL reads an s3:// store URL into a Config:
//
//	s3://bucket/prefix?endpoint=http://127.0.0.1:9000&path_style=true&region=us-east-1
//
// Query parameters override the environment: endpoint falls back to
// TRAJ_S3_ENDPOINT (the SDK itself also honours AWS_ENDPOINT_URL_S3 and
// AWS_ENDPOINT_URL); path_style falls back to TRAJ_S3_PATH_STYLE, and
// defaults to true when any custom endpoint is set (S3-compatible servers
// rarely serve virtual-host buckets), false for AWS. getenv is os.Getenv in
// production. Credentials never go in the URL.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("s3 URL %q: %w (want %s)", raw, err, URLForm)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("s3 URL %q: want %s", raw, URLForm)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("s3 URL %q: credentials do not belong in the URL; use the AWS credential chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, …)", u.Redacted())
	}
	cfg := Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if cfg.Prefix != "" {
		cfg.Prefix += "/"
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "path_style", "region", "part_size":
		default:
			return Config{}, fmt.Errorf("s3 URL %q: unknown parameter %q (want %s)", raw, k, URLForm)
		}
	}
	cfg.Endpoint = q.Get("endpoint")
	if cfg.Endpoint == "" {
		cfg.Endpoint = getenv("TRAJ_S3_ENDPOINT")
	}
	if cfg.Endpoint != "" {
		if e, err := url.Parse(cfg.Endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return Config{}, fmt.Errorf("s3 URL %q: endpoint %q is not an http(s) URL", raw, cfg.Endpoint)
		}
	}
	cfg.PathStyle = cfg.Endpoint != "" || getenv("AWS_ENDPOINT_URL_S3") != "" || getenv("AWS_ENDPOINT_URL") != ""
	ps := q.Get("path_style")
	if ps == "" {
		ps = getenv("TRAJ_S3_PATH_STYLE")
	}
	if ps != "" {
		b, err := strconv.ParseBool(ps)
		if err != nil {
			return Config{}, fmt.Errorf("s3 URL %q: path_style %q is not true or false", raw, ps)
		}
		cfg.PathStyle = b
	}
	cfg.Region = q.Get("region")
	if v := q.Get("part_size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < MinPartSize {
			return Config{}, fmt.Errorf("s3 URL %q: part_size %q must be a byte count of at least %d", raw, v, MinPartSize)
		}
		cfg.PartSize = n
	}
	return cfg, nil
}
