// Package source finds a trajectory's trace and git history from what a
// user types: a trajectory id in a store, a trajectory folder, an
// agent_trace.json path, or loose --trace/--bundle files.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
)

// Request names a trajectory.
type Request struct {
	// Ref is a trajectory id in the store, a trajectory folder or an
	// agent_trace.json path.
	Ref string
	// StoreURL is the store (location.Choose has applied defaults).
	StoreURL string
	// TracePath and BundlePath are loose files; they win over Ref.
	TracePath, BundlePath string
	// TempDir holds a bundle downloaded from a remote store.
	TempDir string
}

// Trajectory is an opened trajectory.
type Trajectory struct {
	ID      string
	Trace   *trace.Trace
	History *githistory.History
	// Store is the store the trajectory was read from, or the store named
	// by StoreURL for loose files; evaluation results are cached there.
	Store store.Store
	// InStore is true when the trajectory lives in Store under its id.
	InStore bool
	// Protected are the folders the trajectory was read from; outputs must
	// not be written inside them.
	Protected []string
	cleanup   []string
}

// Close removes downloaded files.
func (t *Trajectory) Close() error {
	var errs []error
	if t.History != nil {
		errs = append(errs, t.History.Close())
	}
	for _, p := range t.cleanup {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Open resolves req.
func Open(ctx context.Context, req Request) (*Trajectory, error) {
	if location.Scheme(req.Ref) != "" {
		storeURL, id, ok := SplitTrajectoryURL(req.Ref)
		if !ok {
			return nil, replay.UsageError("%s is not a trajectory URL (want s3://bucket/prefix/trajectories/<id>)", req.Ref)
		}
		req.Ref, req.StoreURL = id, storeURL
	}
	st, err := location.Open(ctx, req.StoreURL, location.Options{})
	if err != nil {
		return nil, err
	}
	if req.TracePath != "" || req.BundlePath != "" {
		if req.TracePath == "" || req.BundlePath == "" {
			return nil, replay.UsageError("--trace and --bundle go together")
		}
		return openFiles(ctx, req.TracePath, []string{req.BundlePath}, st)
	}
	if req.Ref == "" {
		return nil, replay.UsageError("give --trajectory-id, or --trace and --bundle")
	}
	if fi, err := os.Stat(req.Ref); err == nil {
		dir, tracePath := req.Ref, filepath.Join(req.Ref, store.TraceName)
		if !fi.IsDir() {
			dir, tracePath = filepath.Dir(req.Ref), req.Ref
		}
		return openFolder(ctx, dir, tracePath, st)
	}
	return openFromStore(ctx, st, req)
}

// SplitTrajectoryURL splits a trajectory URL
// (scheme://bucket/prefix/trajectories/<id>, optionally ending in
// /agent_trace.json, query kept with the store) into the store URL and the
// id.
func SplitTrajectoryURL(raw string) (storeURL, id string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", false
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/"+store.TraceName)
	const marker = "/" + store.TrajectoriesDir
	i := strings.LastIndex(p, marker)
	if i < 0 {
		return "", "", false
	}
	id = p[i+len(marker):]
	if id == "" || strings.Contains(id, "/") {
		return "", "", false
	}
	u.Path, u.RawPath = p[:i], ""
	return u.String(), id, true
}

func openFiles(ctx context.Context, tracePath string, bundles []string, st store.Store) (*Trajectory, error) {
	tr, err := replay.ReadTraceFile(tracePath)
	if err != nil {
		return nil, err
	}
	h, err := githistory.Open(ctx, bundles...)
	if err != nil {
		return nil, err
	}
	t := &Trajectory{ID: tr.TrajectoryID, Trace: tr, History: h, Store: st}
	for _, p := range append([]string{tracePath}, bundles...) {
		if abs, err := filepath.Abs(filepath.Dir(p)); err == nil && !slices.Contains(t.Protected, abs) {
			t.Protected = append(t.Protected, abs)
		}
	}
	return t, nil
}

// openFolder opens a trajectory folder: its repo.bundle, or when the run
// has not finished, the chain of history/<part>.bundle files.
func openFolder(ctx context.Context, dir, tracePath string, st store.Store) (*Trajectory, error) {
	full := filepath.Join(dir, store.BundleName)
	if _, err := os.Stat(full); err == nil {
		return openFiles(ctx, tracePath, []string{full}, st)
	}
	chain, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(store.HistoryDir), "*.bundle"))
	if len(chain) == 0 {
		return nil, fmt.Errorf("%s has no %s and no %s*.bundle (the full bundle is written when the run ends)", dir, store.BundleName, store.HistoryDir)
	}
	sort.Strings(chain) // zero-padded part numbers: lexical order is part order
	return openFiles(ctx, tracePath, chain, st)
}

func openFromStore(ctx context.Context, st store.Store, req Request) (*Trajectory, error) {
	id := req.Ref
	if err := store.ValidateID(id); err != nil {
		return nil, replay.UsageError("%v", err)
	}
	var tr *trace.Trace
	err := st.Load(ctx, store.TraceKey(id), func(r io.Reader) error {
		var err error
		tr, err = trace.Read(r)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, replay.UsageError("trajectory %s not found in store %s (no %s)", id, req.StoreURL, store.TraceKey(id))
	}
	if err != nil {
		return nil, fmt.Errorf("read trace of %s: %w", id, err)
	}
	t := &Trajectory{ID: id, Trace: tr, Store: st, InStore: true}
	if lp, ok := store.AsLocal(st); ok {
		// Never write a checkout into the trajectory's own folder.
		if p, err := lp.LocalPath(store.TraceKey(id)); err == nil {
			t.Protected = append(t.Protected, filepath.Dir(p))
		}
	}
	keys := []string{store.BundleKey(id)}
	if _, err := st.Stat(ctx, store.BundleKey(id)); errors.Is(err, store.ErrNotFound) {
		// The run has not finished (or died): rebuild from the chain of
		// incremental bundles written after each checkpoint.
		keys = nil
		err := st.List(ctx, store.HistoryPrefix(id), func(fi store.FileInfo) error {
			if strings.HasSuffix(fi.Key, ".bundle") {
				keys = append(keys, fi.Key)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list history bundles of %s: %w", id, err)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("trajectory %s has no %s and no history bundles (the full bundle is written when the run ends)", id, store.BundleKey(id))
		}
	} else if err != nil {
		return nil, fmt.Errorf("look up bundle of %s: %w", id, err)
	}
	var paths []string
	for _, key := range keys {
		p, err := t.localCopy(ctx, st, key, req.TempDir)
		if err != nil {
			t.Close()
			return nil, err
		}
		paths = append(paths, p)
	}
	h, err := githistory.Open(ctx, paths...)
	if err != nil {
		t.Close()
		return nil, err
	}
	t.History = h
	return t, nil
}

// localCopy returns a local file holding key: the store's own file for a
// local store, else a download into tempDir removed by Close.
func (t *Trajectory) localCopy(ctx context.Context, st store.Store, key, tempDir string) (string, error) {
	if lp, ok := store.AsLocal(st); ok {
		return lp.LocalPath(key)
	}
	f, err := os.CreateTemp(tempDir, "traj-bundle-*")
	if err != nil {
		return "", fmt.Errorf("download %s: %w", key, err)
	}
	t.cleanup = append(t.cleanup, f.Name())
	err = st.Load(ctx, key, func(r io.Reader) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		_, err := io.Copy(f, r)
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("download %s: %w", key, err)
	}
	return f.Name(), nil
}

// Cache returns the evaluation cache kept in st at store.EvalCacheKey.
func Cache(st store.Store) replay.Cache {
	return &replay.BlobCache{Blobs: blobs{st}, KeyFunc: store.EvalCacheKey, IsNotFound: func(err error) bool { return errors.Is(err, store.ErrNotFound) }}
}

// blobs adapts a store.Store to replay.Blobs.
type blobs struct{ st store.Store }

func (b blobs) Get(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := b.st.Load(ctx, key, func(r io.Reader) error {
		var err error
		data, err = io.ReadAll(r)
		return err
	})
	return data, err
}

func (b blobs) Put(ctx context.Context, key string, data []byte) error {
	return b.st.Save(ctx, key, store.Bytes(data))
}
