package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/upload"
)

// PendingName is the record, in a trajectory folder, of objects the run
// could not upload (see package upload).
const PendingName = "upload_pending.json"

// SyncReport says what Sync did.
type SyncReport struct {
	// InPlace: the trajectory folder is the store; nothing to upload.
	InPlace bool
	// Uploaded are the keys saved, Unchanged the keys already in the store
	// with the same size (immutable objects only).
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

// Sync uploads a trajectory folder's objects that the store lacks: the
// history bundles, repo.bundle, logs, run.json, and agent_trace.json last
// (a reader that sees the trace finds the bundles). It is how a trajectory
// recorded while the store was down reaches the store later, and it works
// whether or not the run finished: whatever the folder holds is uploaded.
// Trace chunks are not re-sent; the whole agent_trace.json supersedes them.
// The store's own retries apply to every object.
func Sync(ctx context.Context, l *Located, log *slog.Logger) (SyncReport, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep SyncReport
	if l.InPlace {
		rep.InPlace = true
		return rep, nil
	}
	if err := l.checkNotRunning(); err != nil {
		return rep, err
	}
	fin, err := traceFinished(l.TracePath())
	if err != nil {
		return rep, fmt.Errorf("sync %s: %w", l.ID, err)
	}
	rep.Unfinished = !fin
	objs, err := localObjects(l.Dir, l.ID)
	if err != nil {
		return rep, err
	}
	up := upload.New(ctx, l.Store, upload.Options{PendingFile: filepath.Join(l.Dir, PendingName), Logger: log})
	enqueue := func(o localObject) {
		if o.immutable {
			if fi, err := l.Store.Stat(ctx, o.key); err == nil && fi.Size == o.size {
				rep.Unchanged = append(rep.Unchanged, o.key)
				return
			}
		}
		if err := up.Enqueue(o.key, store.File(o.path)); err != nil {
			log.Warn("enqueue", "key", o.key, "err", err)
			return
		}
		rep.Uploaded = append(rep.Uploaded, o.key)
		rep.Bytes += o.size
	}
	enqueueTraceLast(ctx, up, l.ID, objs, enqueue, log)
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

// enqueueTraceLast hands objs to enqueue, the trace of trajectory id
// after a flush of all the others: a reader that sees the trace finds the
// bundles.
func enqueueTraceLast(ctx context.Context, up *upload.Uploader, id string, objs []localObject, enqueue func(localObject), log *slog.Logger) {
	var traceObj *localObject
	for i, o := range objs {
		if o.key == store.TraceKey(id) {
			traceObj = &objs[i]
			continue
		}
		enqueue(o)
	}
	if _, err := up.Flush(ctx); err != nil {
		log.Warn("flush uploads", "err", err)
	}
	if traceObj != nil {
		enqueue(*traceObj)
	}
}

// localObject is a file of the trajectory folder and its key in the store.
type localObject struct {
	key, path string
	size      int64
	// immutable objects never change once written (history bundles), so
	// one of the same size in the store is the same object.
	immutable bool
}

// localObjects lists what the folder dir of trajectory id holds for the
// store, in upload order: history bundles by part, repo.bundle, logs,
// run.json, the trace. Hidden and temporary files (the trace's shadow,
// half-written files) and the pending record are not objects.
func localObjects(dir, id string) ([]localObject, error) {
	var out []localObject
	add := func(key, path string, immutable bool) error {
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			out = append(out, localObject{key: key, path: path, size: fi.Size(), immutable: immutable})
		}
		return nil
	}
	listDir := func(sub string) ([]string, error) {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", filepath.Join(dir, sub), err)
		}
		var names []string
		for _, e := range entries {
			if n := e.Name(); !strings.HasPrefix(n, ".") && e.Type().IsRegular() && store.ValidateKey(n) == nil {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		return names, nil
	}
	history, err := listDir(store.HistoryDir)
	if err != nil {
		return nil, err
	}
	for _, n := range history {
		if strings.HasSuffix(n, ".bundle") {
			if err := add(store.HistoryPrefix(id)+n, filepath.Join(dir, filepath.FromSlash(store.HistoryDir), n), true); err != nil {
				return nil, err
			}
		}
	}
	if err := add(store.BundleKey(id), filepath.Join(dir, store.BundleName), false); err != nil {
		return nil, err
	}
	logs, err := listDir(store.LogsDir)
	if err != nil {
		return nil, err
	}
	for _, n := range logs {
		if err := add(store.LogKey(id, n), filepath.Join(dir, filepath.FromSlash(store.LogsDir), n), false); err != nil {
			return nil, err
		}
	}
	if err := add(store.LogKey(id, RunStateName), filepath.Join(dir, RunStateName), false); err != nil {
		return nil, err
	}
	if err := add(store.TraceKey(id), filepath.Join(dir, store.TraceName), false); err != nil {
		return nil, err
	}
	for _, o := range out {
		if err := store.ValidateKey(o.key); err != nil {
			return nil, err
		}
	}
	return out, nil
}
