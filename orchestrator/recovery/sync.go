package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/upload"
)

// SyncReport says what Sync did.
type SyncReport struct {
	// InPlace: the trajectory folder is the store; nothing to upload.
	InPlace bool
	// Uploaded are the keys saved, Unchanged the keys already in the store
	// with the same content (size and SHA-256; immutable objects by size).
	Uploaded  []string
	Unchanged []string
	Bytes     int64
	// Failed are the objects still not uploaded (recorded in
	// upload_pending.json for the next sync).
	Failed []upload.Failure
	// Unfinished: the trace has no session_end (the run died; resume or
	// finalize it).
	Unfinished bool
}

// Err summarises the failures, or is nil.
func (r SyncReport) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	return upload.Report{Failed: r.Failed}.Err()
}

// Sync uploads a trajectory folder's objects that the store lacks or holds
// with other content (size, then SHA-256 compared): the
// history bundles, repo.bundle, logs, run.json, and agent_trace.json last
// (a reader that sees the trace finds the bundles). It is how a trajectory
// recorded while the store was down reaches the store later, and it works
// whether or not the run finished: whatever the folder holds is uploaded.
// Trace chunks are not re-sent; the whole agent_trace.json supersedes them.
// The store's own retries apply to every object.
func Sync(ctx context.Context, l *folder.Located, log *slog.Logger) (SyncReport, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep SyncReport
	if l.InPlace {
		rep.InPlace = true
		return rep, nil
	}
	if err := l.CheckNotRunning(); err != nil {
		return rep, err
	}
	fin, err := traceFinished(l.TracePath())
	if err != nil {
		return rep, fmt.Errorf("sync %s: %w", l.ID, err)
	}
	rep.Unfinished = !fin
	objs, err := folder.Objects(l.Dir, l.ID)
	if err != nil {
		return rep, err
	}
	up := upload.New(ctx, l.Store, upload.Options{PendingFile: filepath.Join(l.Dir, store.PendingName), Logger: log})
	enqueue := func(o folder.Object) {
		if inStore(ctx, l.Store, o) {
			rep.Unchanged = append(rep.Unchanged, o.Key)
			return
		}
		if err := up.Enqueue(o.Key, store.File(o.Path)); err != nil {
			log.Warn("enqueue", "key", o.Key, "err", err)
			return
		}
		rep.Uploaded = append(rep.Uploaded, o.Key)
		rep.Bytes += o.Size
	}
	folder.EnqueueTraceLast(ctx, up, l.ID, objs, enqueue, log)
	final, err := up.Close(ctx)
	rep.Failed = final.Failed
	failed := map[string]bool{}
	for _, f := range final.Failed {
		failed[f.Key] = true
	}
	kept := rep.Uploaded[:0]
	for _, k := range rep.Uploaded {
		if !failed[k] {
			kept = append(kept, k)
		}
	}
	rep.Uploaded = kept
	if err != nil {
		return rep, fmt.Errorf("sync %s: %w", l.ID, err)
	}
	return rep, nil
}

// inStore reports whether the store holds o's content already: an
// immutable object (a history bundle) by its size, any other by size and
// digest (store.ObjectDigest: the backend's own, never a download from S3
// for objects traj saved). Any doubt (an error) means upload.
func inStore(ctx context.Context, st store.Store, o folder.Object) bool {
	fi, err := st.Stat(ctx, o.Key)
	if err != nil || fi.Size != o.Size {
		return false
	}
	if o.Immutable {
		return true
	}
	remote, err := store.ObjectDigest(ctx, st, o.Key)
	if err != nil {
		return false
	}
	local, err := store.SourceDigest(store.File(o.Path))
	return err == nil && local == remote
}
