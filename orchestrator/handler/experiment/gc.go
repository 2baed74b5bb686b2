package experiment

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	xp "github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace/store/location"
)

// GCRequest is `traj gc`.
type GCRequest struct {
	// Store is the store the trajectories were recorded into ("":
	// TRAJ_STORE, else ./runs); WorkDir the local folder holding
	// trajectories/ and sandboxes/ ("": the store folder if local, else
	// ./runs).
	Store, WorkDir string
	// DryRun only lists what would be removed and why the rest is kept.
	DryRun bool
	Stdout io.Writer
}

// GC removes the sandbox folders of finalized trajectories
// (experiment.GC) and lists each folder removed or kept, then the total.
func GC(ctx context.Context, r GCRequest) error {
	w, err := xp.Open(ctx, &xp.Spec{Store: location.Choose(r.Store, os.Getenv), WorkDir: r.WorkDir}, "")
	if err != nil {
		return replay.Usage(err)
	}
	res, err := xp.GC(ctx, w, r.DryRun)
	if err != nil {
		return err
	}
	out := r.Stdout
	if out == nil {
		out = io.Discard
	}
	var freed int64
	kept := 0
	for _, g := range res {
		switch {
		case g.Removed:
			freed += g.Bytes
			fmt.Fprintf(out, "removed %s (%s)\n", g.Dir, humanBytes(g.Bytes))
		case g.Kept == "":
			freed += g.Bytes
			fmt.Fprintf(out, "would remove %s (%s)\n", g.Dir, humanBytes(g.Bytes))
		default:
			kept++
			fmt.Fprintf(out, "kept %s: %s\n", filepath.Base(g.Dir), g.Kept)
		}
	}
	verb := "freed"
	if r.DryRun {
		verb = "would free"
	}
	fmt.Fprintf(out, "%d sandboxes, %s %s, %d kept\n", len(res), verb, humanBytes(freed), kept)
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
