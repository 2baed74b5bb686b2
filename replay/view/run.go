package view

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/replay"
)

// Run is `traj view`: it serves the viewer of opts.StoreURL on the
// loopback address addr until ctx ends, after writing the address to
// open (with its token) to stdout. A non-loopback address or a store that
// cannot be opened matches replay.ErrUsage.
func Run(ctx context.Context, opts Options, addr string, stdout io.Writer) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return replay.UsageError("address %q: %v", addr, err)
	}
	if !IsLoopback(addr) {
		return replay.UsageError("address %q: only loopback addresses (127.0.0.1, ::1, localhost) are allowed", addr)
	}
	if opts.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("find a cache folder (set XDG_CACHE_HOME or --cache-dir): %w", err)
		}
		opts.CacheDir = filepath.Join(d, "traj", "view")
	}
	srv, err := New(ctx, opts)
	if err != nil {
		return replay.Usage(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	fmt.Fprintf(stdout, "traj view of %s: open %s\n", opts.StoreURL, srv.StartURL(ln.Addr()))
	return srv.Serve(ctx, ln)
}
