// Package source finds a trajectory's trace and git history from what a
// user types: a trajectory id in a store, a trajectory folder, an
// agent_trace.json path, or loose --trace/--bundle files.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	for _, p := range t.cleanup {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Open resolves req.
func Open(ctx context.Context, req Request) (*Trajectory, error) {
	st, err := location.Open(ctx, req.StoreURL, location.Options{})
	if err != nil {
		return nil, err
	}
	if req.TracePath != "" || req.BundlePath != "" {
		if req.TracePath == "" || req.BundlePath == "" {
			return nil, fmt.Errorf("%w: --trace and --bundle go together", replay.ErrUsage)
		}
		return openFiles(req.TracePath, req.BundlePath, st)
	}
	if req.Ref == "" {
		return nil, fmt.Errorf("%w: give --trajectory-id, or --trace and --bundle", replay.ErrUsage)
	}
	if fi, err := os.Stat(req.Ref); err == nil {
		if fi.IsDir() {
			return openFiles(filepath.Join(req.Ref, store.TraceName), filepath.Join(req.Ref, store.BundleName), st)
		}
		return openFiles(req.Ref, filepath.Join(filepath.Dir(req.Ref), store.BundleName), st)
	}
	if location.Scheme(req.Ref) != "" {
		return nil, fmt.Errorf("%w: %s: give the trajectory id with --store pointing at the store", replay.ErrUsage, req.Ref)
	}
	return openFromStore(ctx, st, req)
}

func openFiles(tracePath, bundlePath string, st store.Store) (*Trajectory, error) {
	tr, err := replay.ReadTraceFile(tracePath)
	if err != nil {
		return nil, err
	}
	h, err := githistory.Open(bundlePath)
	if err != nil {
		return nil, fmt.Errorf("%w (a trajectory's repo.bundle is written when the run ends)", err)
	}
	t := &Trajectory{ID: tr.TrajectoryID, Trace: tr, History: h, Store: st}
	for _, p := range []string{tracePath, bundlePath} {
		if abs, err := filepath.Abs(filepath.Dir(p)); err == nil {
			t.Protected = append(t.Protected, abs)
		}
	}
	return t, nil
}

func openFromStore(ctx context.Context, st store.Store, req Request) (*Trajectory, error) {
	id := req.Ref
	if err := store.ValidateID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", replay.ErrUsage, err)
	}
	var tr *trace.Trace
	err := st.Load(ctx, store.TraceKey(id), func(r io.Reader) error {
		var err error
		tr, err = trace.Read(r)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: trajectory %s not found in store %s (no %s)", replay.ErrUsage, id, req.StoreURL, store.TraceKey(id))
	}
	if err != nil {
		return nil, fmt.Errorf("read trace of %s: %w", id, err)
	}
	t := &Trajectory{ID: id, Trace: tr, Store: st, InStore: true}
	bundle := ""
	if lp, ok := store.AsLocal(st); ok {
		if p, err := lp.LocalPath(store.BundleKey(id)); err == nil {
			bundle = p
			t.Protected = append(t.Protected, filepath.Dir(p))
		}
	}
	if bundle == "" {
		f, err := os.CreateTemp(req.TempDir, "traj-bundle-*")
		if err != nil {
			return nil, fmt.Errorf("download bundle: %w", err)
		}
		bundle = f.Name()
		t.cleanup = append(t.cleanup, bundle)
		err = st.Load(ctx, store.BundleKey(id), func(r io.Reader) error {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			if err := f.Truncate(0); err != nil {
				return err
			}
			_, err := io.Copy(f, r)
			return err
		})
		f.Close()
		if err != nil {
			t.Close()
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("trajectory %s has no %s yet (it is written when the run ends)", id, store.BundleKey(id))
			}
			return nil, fmt.Errorf("download bundle of %s: %w", id, err)
		}
	}
	if _, err := os.Stat(bundle); err != nil {
		return nil, fmt.Errorf("trajectory %s has no %s yet (it is written when the run ends)", id, store.BundleKey(id))
	}
	h, err := githistory.Open(bundle)
	if err != nil {
		t.Close()
		return nil, err
	}
	t.History = h
	return t, nil
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
