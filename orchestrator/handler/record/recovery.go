package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/recovery"
	"github.com/trajlab/traj/trace"
)

// Located names a trajectory recorded on this machine, as `traj run` was
// given it, or by its folder: what `traj sync` and `traj trace finalize`
// take.
type Located struct {
	// Ref is its id (with WorkDir or Store as for traj run), its folder
	// <work-dir>/trajectories/<id>, or its agent_trace.json.
	Ref string
	// Store overrides the store the run used (run.json's).
	Store   string
	WorkDir string
	Stdout  io.Writer
	Logger  *slog.Logger
}

// locate finds the trajectory; an unknown one is a BadRequest.
func (r *Located) locate(ctx context.Context) (*folder.Located, error) {
	if r.Stdout == nil {
		r.Stdout = io.Discard
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	id, work, err := folder.SplitRef(r.Ref, r.WorkDir)
	if err != nil {
		return nil, &BadRequest{err}
	}
	l, err := folder.Locate(ctx, folder.LocateOptions{ID: id, Store: r.Store, WorkDir: work, Logger: r.Logger})
	if err != nil {
		return nil, &BadRequest{err}
	}
	return l, nil
}

// Sync uploads what the trajectory folder holds and its store lacks (a
// run recorded while the store was unreachable) and says what it did. Its
// error: a BadRequest for an unknown trajectory, folder.ErrStillRunning,
// or the objects still missing (listed).
func Sync(ctx context.Context, r Located) error {
	l, err := r.locate(ctx)
	if err != nil {
		return err
	}
	rep, err := recovery.Sync(ctx, l, r.Logger)
	if err != nil {
		return err
	}
	PrintSync(r.Stdout, l, rep)
	return rep.Err()
}

// Finalize closes a trajectory that will not continue (its `traj run`
// died): final checkpoint, repo.bundle, session_end interrupted, summary,
// uploads; and says what it did. Its error: a BadRequest for an unknown
// trajectory, folder.ErrStillRunning, the finish's, or the objects still
// not uploaded (`traj sync` retries them).
func Finalize(ctx context.Context, r Located) error {
	l, err := r.locate(ctx)
	if err != nil {
		return err
	}
	res, err := recovery.Finalize(ctx, l, recovery.FinalizeOptions{Logger: r.Logger})
	if res == nil || errors.Is(err, folder.ErrStillRunning) {
		return err
	}
	SaveSummary(ctx, r.Logger, l.Store, l.ID)
	if res.AlreadyFinished {
		fmt.Fprintf(r.Stdout, "trajectory %s was already finished\n", l.ID)
	} else {
		PrintSummary(r.Stdout, &res.Result)
	}
	PrintSync(r.Stdout, l, res.Sync)
	if err != nil {
		return err
	}
	return res.Sync.Err()
}

// PrintSync says what a sync uploaded, what was there already, what is
// not uploaded and, for an unfinished trace, how to go on.
func PrintSync(w io.Writer, l *folder.Located, rep recovery.SyncReport) {
	if rep.InPlace {
		fmt.Fprintf(w, "trajectory %s: the store is the trajectory folder (%s); nothing to upload\n", l.ID, l.Dir)
		return
	}
	if len(rep.Uploaded) == 0 && len(rep.Failed) == 0 {
		fmt.Fprintf(w, "trajectory %s → %s: nothing to do, the store holds all %d objects\n", l.ID, l.Store.URI(""), len(rep.Unchanged))
	} else {
		fmt.Fprintf(w, "trajectory %s → %s: %d objects uploaded (%d bytes), %d already there, %d not uploaded\n",
			l.ID, l.Store.URI(""), len(rep.Uploaded), rep.Bytes, len(rep.Unchanged), len(rep.Failed))
	}
	if rep.Unfinished {
		fmt.Fprintf(w, "  the trace has no session_end: continue it with `traj run --resume %s` or close it with `traj trace finalize %s`\n", trace.ShellWord(l.ID), trace.ShellWord(l.ID))
	}
	if len(rep.Failed) > 0 {
		var keys []string
		for _, f := range rep.Failed {
			keys = append(keys, f.Key)
		}
		fmt.Fprintf(w, "  not uploaded: %s\n", strings.Join(keys, ", "))
	}
}
