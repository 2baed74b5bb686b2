// Package ref resolves a trajectory reference — what a user types after
// `traj trace show` — into the trajectory's objects:
//
//	ID                                   an id in the store (--store, TRAJ_STORE, default ./runs)
//	DIR                                  a trajectory folder (holding agent_trace.json or chunks/: IsTrajectoryFolder)
//	FILE                                 an agent_trace.json path
//	s3://bucket/prefix/trajectories/ID   a trajectory in an S3 store (query parameters as for the store)
//
// Remote objects are downloaded into a cache folder; local ones are used
// in place. When agent_trace.json is missing (the run died before its end)
// the trace is rebuilt from the per-mutation chunks (package chunk), and
// when repo.bundle is missing the history/ bundles stand in for it.
package ref

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/location"
)

// ErrNotFound wraps every "no such trajectory" answer, so the CLI can map
// it to a usage error.
var ErrNotFound = store.ErrNotFound

// Forms lists the accepted references, for errors and help.
const Forms = "a trajectory id in the store, a trajectory folder, an agent_trace.json path, or s3://bucket/prefix/trajectories/<id>"

// Options tune Resolve. The zero value is usable.
type Options struct {
	// CacheDir holds downloads; default os.UserCacheDir()/traj/trajectories.
	CacheDir string
	// Store is passed to location.Open (tests inject S3 credentials).
	Store location.Options
}

// Trajectory is a resolved reference.
type Trajectory struct {
	// ID is the trajectory id (for a folder or file: the folder's name).
	ID string
	// Store holds the trajectory's objects under Prefix.
	Store  store.Store
	Prefix string
	// Where says where it was found, for messages.
	Where string
	// Dir is the trajectory's folder on this machine when it was named by
	// its folder or trace file; "" for a store's trajectory.
	Dir string

	traceKey string
	cacheDir string
}

// Resolve finds the trajectory r names; storeURL is the store for bare ids
// (location.Choose applies --store, TRAJ_STORE and the default).
func Resolve(ctx context.Context, r, storeURL string, opts Options) (*Trajectory, error) {
	if r == "" {
		return nil, fmt.Errorf("empty trajectory reference: want %s", Forms)
	}
	if storeURL == "" {
		storeURL = location.Default
	}
	switch location.Scheme(r) {
	case "":
	case "file":
		p, err := location.FilePath(r)
		if err != nil {
			return nil, err
		}
		r = p
	case "s3":
		su, id, err := SplitTrajectoryURL(r)
		if err != nil {
			return nil, err
		}
		return fromStore(ctx, id, su, opts)
	default:
		return nil, fmt.Errorf("trajectory reference %q: unsupported scheme: want %s", r, Forms)
	}
	fi, err := os.Stat(r)
	switch {
	case err == nil && fi.IsDir():
		return fromFolder(r, opts)
	case err == nil:
		return fromFile(r, opts)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("trajectory reference %q: %w", r, err)
	case strings.ContainsAny(r, `/\`) || strings.HasSuffix(r, ".json"):
		return nil, fmt.Errorf("trajectory reference %q: no such file or folder: %w", r, ErrNotFound)
	}
	return fromStore(ctx, r, storeURL, opts)
}

// SplitTrajectoryURL splits s3://bucket/prefix/trajectories/<id>[/agent_trace.json][?query]
// into the store URL (query kept) and the id.
func SplitTrajectoryURL(raw string) (storeURL, id string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("trajectory URL %q: %w", raw, err)
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/"+store.TraceName)
	const marker = "/" + store.TrajectoriesDir
	i := strings.LastIndex(p, marker)
	if i < 0 || u.Host == "" {
		return "", "", fmt.Errorf("trajectory URL %q: want s3://bucket/prefix/%s<id>", u.Redacted(), store.TrajectoriesDir)
	}
	id = p[i+len(marker):]
	if err := store.ValidateID(id); err != nil {
		return "", "", fmt.Errorf("trajectory URL %q: %w", u.Redacted(), err)
	}
	u.Path, u.RawPath = p[:i], ""
	return u.String(), id, nil
}

func fromStore(ctx context.Context, id, storeURL string, opts Options) (*Trajectory, error) {
	if err := store.ValidateID(id); err != nil {
		return nil, fmt.Errorf("trajectory reference: %w (want %s)", err, Forms)
	}
	lopts := opts.Store
	lopts.MustExist = true // looking up must not create a store folder
	st, err := location.Open(ctx, storeURL, lopts)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("trajectory %q not found: %w (choose the store with --store or TRAJ_STORE)", id, err)
		}
		return nil, err
	}
	t := &Trajectory{ID: id, Store: st, Prefix: store.TrajectoryPrefix(id), Where: "store " + storeURL,
		traceKey: store.TraceKey(id), cacheDir: opts.CacheDir}
	_, found, err := Lookup(ctx, st, id)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", storeURL, err)
	}
	if !found {
		return nil, fmt.Errorf("trajectory %q not found in store %s (no %s nor %s under %s; choose the store with --store or TRAJ_STORE): %w",
			id, storeURL, store.TraceName, store.ChunksDir, t.Prefix, ErrNotFound)
	}
	return t, nil
}

var errStop = errors.New("stop")

func fromFolder(dir string, opts Options) (*Trajectory, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if !IsTrajectoryFolder(abs) {
		if IsStoreFolder(abs) {
			return nil, fmt.Errorf("%s is a store, not a trajectory folder: give an id with --store %s: %w", dir, dir, ErrNotFound)
		}
		return nil, fmt.Errorf("%s: no such file %s (nor %s): not a trajectory folder: %w",
			dir, store.TraceName, store.ChunksDir, ErrNotFound)
	}
	st, err := local.Open(abs)
	if err != nil {
		return nil, err
	}
	return &Trajectory{ID: filepath.Base(abs), Store: st, Where: "folder " + dir, Dir: abs, traceKey: store.TraceName, cacheDir: opts.CacheDir}, nil
}

func fromFile(path string, opts Options) (*Trajectory, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	st, err := local.Open(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	name := filepath.Base(abs)
	if err := store.ValidateKey(name); err != nil {
		return nil, fmt.Errorf("trace file %q: unusable name: %w", path, err)
	}
	return &Trajectory{ID: filepath.Base(filepath.Dir(abs)), Store: st, Where: "file " + path, Dir: filepath.Dir(abs), traceKey: name, cacheDir: opts.CacheDir}, nil
}

// cache is the local folder for this trajectory's downloads.
func (t *Trajectory) cache() (string, error) {
	base := t.cacheDir
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("find a cache folder (set XDG_CACHE_HOME): %w", err)
		}
		base = filepath.Join(d, "traj", "trajectories")
	}
	h := sha256.Sum256([]byte(t.Store.URI(t.Prefix)))
	dir := filepath.Join(base, hex.EncodeToString(h[:8]), t.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create cache folder: %w", err)
	}
	return dir, nil
}

// TracePath returns a local agent_trace.json for the trajectory: the file
// itself for local stores, a cached download for remote ones, or — when
// the store has no agent_trace.json — a trace rebuilt from the chunks
// (rebuilt is then true; gap reports a missing range, the trace ending
// before it).
func (t *Trajectory) TracePath(ctx context.Context) (path string, rebuilt bool, err error) {
	p, err := t.fetch(ctx, t.traceKey)
	if err == nil {
		return p, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", false, err
	}
	codec, cerr := chunk.NewCodec()
	if cerr != nil {
		return "", false, cerr
	}
	dir, cerr := t.cache()
	if cerr != nil {
		return "", false, cerr
	}
	dst := filepath.Join(dir, "rebuilt-"+store.TraceName)
	var rep chunk.Report
	werr := atomicfile.WriteFile(dst, time.Time{}, func(f *os.File) error {
		var err error
		rep, err = codec.Rebuild(ctx, t.Store, t.Prefix, f)
		return err
	})
	if werr != nil {
		if errors.Is(werr, store.ErrNotFound) {
			return "", false, fmt.Errorf("trajectory %s in %s has no %s and no chunks to rebuild it from: %w", t.ID, t.Where, t.traceKey, ErrNotFound)
		}
		return "", false, fmt.Errorf("rebuild trace of %s: %w", t.ID, werr)
	}
	if rep.Gap {
		return dst, true, fmt.Errorf("trace of %s rebuilt only up to byte %d: chunks from byte %d on are missing: %w",
			t.ID, rep.GapStart, rep.GapEnd, ErrPartial)
	}
	return dst, true, nil
}

// ErrPartial is returned (with a usable path) when a rebuilt trace stops
// before its last uploaded chunk because one in between is missing.
var ErrPartial = errors.New("partial trace")

// BundlePaths returns local git bundles holding the trajectory's history:
// repo.bundle, or when it is missing the history/ bundles in part order
// (each one's prerequisites are in the ones before it).
func (t *Trajectory) BundlePaths(ctx context.Context) ([]string, error) {
	p, err := t.fetch(ctx, t.Prefix+store.BundleName)
	if err == nil {
		return []string{p}, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	paths, err := t.HistoryPaths(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("trajectory %s in %s has no %s and no %s*.bundle: %w", t.ID, t.Where, store.BundleName, store.HistoryDir, ErrNotFound)
	}
	return paths, err
}

// HistoryPaths returns the trajectory's incremental history/ bundles as
// local files, in part order (each one's prerequisites are in the ones
// before it); none is ErrNotFound.
func (t *Trajectory) HistoryPaths(ctx context.Context) ([]string, error) {
	keys, err := store.HistoryBundleKeys(ctx, t.Store, t.Prefix+store.HistoryDir)
	if err != nil {
		return nil, fmt.Errorf("list history bundles of %s: %w", t.ID, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("trajectory %s in %s has no %s*.bundle: %w", t.ID, t.Where, store.HistoryDir, ErrNotFound)
	}
	paths := make([]string, 0, len(keys))
	for _, k := range keys {
		p, err := t.fetch(ctx, k)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Fetch returns a local file holding the trajectory's object key (a key
// under Prefix): in place for local stores, else a cached download. A call
// record (ModelCallsName, ToolCallsName) is whole in the store only once
// its run ended; before, a running trajectory has uploaded it as call
// chunks at its turn ends, and Fetch puts them back together
// (store.LoadRecord, the one reader of call chunks) into the cache.
func (t *Trajectory) Fetch(ctx context.Context, key string) (string, error) {
	if name, ok := strings.CutPrefix(key, t.Prefix); ok && (name == store.ModelCallsName || name == store.ToolCallsName) {
		return t.fetchRecord(ctx, name)
	}
	return t.fetch(ctx, key)
}

// fetchRecord is Fetch of call record name: the whole object when the
// store has it, else its call chunks put together into the cache, reused
// while the size and time the chunks reach (store.StatRecord) match.
func (t *Trajectory) fetchRecord(ctx context.Context, name string) (string, error) {
	p, err := t.fetch(ctx, t.Prefix+name)
	if !errors.Is(err, store.ErrNotFound) {
		return p, err
	}
	fi, err := store.StatRecord(ctx, t.Store, t.Prefix, name)
	if err != nil {
		return "", err
	}
	dir, err := t.cache()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.FromSlash(store.CallsDir), name)
	if c, err := os.Stat(dst); err == nil && c.Size() == fi.Size && c.ModTime().Equal(fi.ModTime) {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("create cache folder: %w", err)
	}
	err = atomicfile.WriteFile(dst, fi.ModTime, func(f *os.File) error {
		return store.LoadRecord(ctx, t.Store, t.Prefix, name, func(r io.Reader) error {
			_, err := io.Copy(f, r)
			return err
		})
	})
	if err != nil {
		return "", fmt.Errorf("put together the call chunks of %s: %w", t.Store.URI(t.Prefix+name), err)
	}
	return dst, nil
}

// fetch returns a local file holding key: in place for local stores, else
// a download into the cache, reused while size and time match the store's.
func (t *Trajectory) fetch(ctx context.Context, key string) (string, error) {
	fi, err := t.Store.Stat(ctx, key)
	if err != nil {
		return "", err
	}
	if lp, ok := store.AsLocal(t.Store); ok {
		return lp.LocalPath(key)
	}
	dir, err := t.cache()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(key, t.Prefix)))
	if c, err := os.Stat(dst); err == nil && c.Size() == fi.Size && c.ModTime().Equal(fi.ModTime) {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("create cache folder: %w", err)
	}
	err = atomicfile.WriteFile(dst, fi.ModTime, func(f *os.File) error {
		return t.Store.Load(ctx, key, func(r io.Reader) error {
			// A retried Load starts again: drop what an earlier try wrote.
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			if err := f.Truncate(0); err != nil {
				return err
			}
			_, err := io.Copy(f, r)
			return err
		})
	})
	if err != nil {
		return "", fmt.Errorf("download %s: %w", t.Store.URI(key), err)
	}
	return dst, nil
}

// InStore is trajectory id of st, a store the caller has opened and listed
// (where names it for messages): no lookup, so listing a store of a
// thousand trajectories resolves each without another request.
func InStore(st store.Store, where, id string, opts Options) (*Trajectory, error) {
	if err := store.ValidateID(id); err != nil {
		return nil, err
	}
	return &Trajectory{ID: id, Store: st, Prefix: store.TrajectoryPrefix(id), Where: where,
		traceKey: store.TraceKey(id), cacheDir: opts.CacheDir}, nil
}

// TraceKey is the key of the trajectory's agent_trace.json in Store.
func (t *Trajectory) TraceKey() string { return t.traceKey }
