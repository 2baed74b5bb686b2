// Package location opens the store a URL names:
//
//	./runs, /abs/folder, file:///abs/folder   a local folder (package local)
//	s3://bucket/prefix?endpoint=…             an S3 bucket (package s3)
//
// The store comes wrapped in retry, so callers get backoff on transient
// faults without asking.
package location

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/retry"
	s3store "github.com/trajlab/traj/trace/store/s3"
)

// Default is the store used when neither --store nor TRAJ_STORE is given.
const Default = "./runs"

// EnvStore is the environment variable naming the default store.
const EnvStore = "TRAJ_STORE"

// Forms lists the accepted store URLs, for error messages and help.
const Forms = "a folder path, file:///abs/path, or " + s3store.URLForm

// Options tunes Open. The zero value is ready for production.
type Options struct {
	// Retry is the retry policy wrapped around the store.
	Retry retry.Policy
	// NoRetry returns the bare store (tests of the backends themselves).
	NoRetry bool
	// MustExist refuses a local folder that does not exist instead of
	// creating it (readers must not create stores).
	MustExist bool
	// Getenv reads S3 settings from the environment; nil means os.Getenv.
	Getenv func(string) string
	// S3 adjusts the S3 config after the URL is parsed (tests inject
	// credentials here; production leaves it nil and uses the chain).
	S3     func(*s3store.Config)
	Logger *slog.Logger
}

// Choose picks the store URL: the flag if set, else TRAJ_STORE, else Default.
func Choose(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(EnvStore); v != "" {
		return v
	}
	return Default
}

// Open returns the store raw names.
func Open(ctx context.Context, raw string, opts Options) (store.Store, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	var (
		s   store.Store
		err error
	)
	switch scheme := Scheme(raw); scheme {
	case "":
		if raw == "" {
			return nil, fmt.Errorf("empty store location: want %s", Forms)
		}
		s, err = openLocal(raw, opts.MustExist)
	case "file":
		var path string
		path, err = FilePath(raw)
		if err == nil {
			s, err = openLocal(path, opts.MustExist)
		}
	case "s3":
		var cfg s3store.Config
		cfg, err = s3store.ParseURL(raw, opts.Getenv)
		if err == nil {
			if opts.S3 != nil {
				opts.S3(&cfg)
			}
			s, err = s3store.Open(ctx, cfg)
		}
	default:
		return nil, fmt.Errorf("store %q: unsupported scheme %q: want %s", redact(raw), scheme, Forms)
	}
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if opts.NoRetry {
		return s, nil
	}
	p := opts.Retry
	if p.Logger == nil {
		p.Logger = opts.Logger
	}
	return retry.Wrap(s, p), nil
}

func openLocal(dir string, mustExist bool) (store.Store, error) {
	if mustExist {
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("store folder %s: %w: %w", dir, store.ErrNotFound, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("store %s is not a folder: %w", dir, store.ErrNotFound)
		}
	}
	return local.Open(dir)
}

// Scheme is the URL scheme of raw, or "" for a plain path.
func Scheme(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return ""
	}
	scheme := raw[:i]
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return ""
		}
	}
	return strings.ToLower(scheme)
}

// FilePath is the local path of a file:// URL (empty host or localhost).
func FilePath(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("file URL %q: %w", raw, err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("file URL %q: remote host %q not supported; want file:///abs/path", raw, u.Host)
	}
	if u.Path == "" || u.RawQuery != "" {
		return "", fmt.Errorf("file URL %q: want file:///abs/path", raw)
	}
	return u.Path, nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}
