package gitstate

import (
	"context"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

// WriteHistoryBundle writes the bundle that extends a reader holding the
// commit since to every ref of the repository: an incremental bundle with
// since as its prerequisite, or a full bundle when since is zero (the first
// one of a run). Bundles written this way after each committed checkpoint,
// each since the previous one's HEAD, rebuild the repository in order with
// CloneFromBundles.
func (r *Repo) WriteHistoryBundle(ctx context.Context, w io.Writer, since plumbing.Hash) (*BundleHeader, error) {
	var opts BundleOptions
	if !since.IsZero() {
		opts.Prerequisites = []plumbing.Hash{since}
	}
	return r.WriteBundle(ctx, w, opts)
}
