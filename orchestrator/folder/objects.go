package folder

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

// EnqueueTraceLast hands objs to enqueue, the trace of trajectory id
// after a flush of all the others: a reader that sees the trace finds the
// bundles.
func EnqueueTraceLast(ctx context.Context, up *upload.Uploader, id string, objs []Object, enqueue func(Object), log *slog.Logger) {
	var traceObj *Object
	for i, o := range objs {
		if o.Key == store.TraceKey(id) {
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

// Object is a file of the trajectory folder and its key in the store.
type Object struct {
	Key, Path string
	Size      int64
	// immutable objects never change once written (history bundles), so
	// one of the same size in the store is the same object.
	Immutable bool
}

// Objects lists what the folder dir of trajectory id holds for the
// store, in upload order: history bundles by part, repo.bundle, logs,
// run.json, the model and tool call records, the part index, the trace. Hidden and temporary files (the trace's shadow,
// half-written files) and the pending record are not objects.
func Objects(dir, id string) ([]Object, error) {
	var out []Object
	add := func(key, path string, immutable bool) error {
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			out = append(out, Object{Key: key, Path: path, Size: fi.Size(), Immutable: immutable})
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
		if store.IsHistoryBundle(n) {
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
	if err := add(store.RunStateKey(id), filepath.Join(dir, store.RunStateName), false); err != nil {
		return nil, err
	}
	for _, r := range Records(dir, id) {
		if err := add(r.Key, r.Path, false); err != nil {
			return nil, err
		}
	}
	if err := add(store.PartIndexKey(id), filepath.Join(dir, store.PartIndexName), false); err != nil {
		return nil, err
	}
	if err := add(store.TraceKey(id), filepath.Join(dir, store.TraceName), false); err != nil {
		return nil, err
	}
	for _, o := range out {
		if err := store.ValidateKey(o.Key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Records are the call records of trajectory id in its folder dir (which
// may not exist yet): the model gateway's and the tool gateway's. Size is
// not filled.
func Records(dir, id string) []Object {
	return []Object{
		{Key: store.ModelCallsKey(id), Path: filepath.Join(dir, store.ModelCallsName)},
		{Key: store.ToolCallsKey(id), Path: filepath.Join(dir, store.ToolCallsName)},
	}
}
