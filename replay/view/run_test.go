package view

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay"
)

// TestRunRefuses: the viewer listens on loopback only and views a store
// that exists; anything else is a usage error before it listens.
func TestRunRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ store, addr, want string }{
		{dir, "0.0.0.0:0", "only loopback"},
		{dir, "192.0.2.1:80", "only loopback"},
		{dir, "[::]:0", "only loopback"},
		{dir, "127.0.0.1", "missing port"},
		{filepath.Join(dir, "nope"), "127.0.0.1:0", "not found"},
		{"ftp://x/y", "127.0.0.1:0", "unsupported scheme"},
	} {
		err := Run(context.Background(), Options{StoreURL: tc.store, CacheDir: t.TempDir()}, tc.addr, io.Discard)
		if !errors.Is(err, replay.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("store %s, addr %s: %v, want a usage error with %q", tc.store, tc.addr, err, tc.want)
		}
	}
}
