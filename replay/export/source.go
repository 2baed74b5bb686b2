package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Forms lists the references export accepts, for errors and help.
const Forms = ref.Forms + ", a store (folder with trajectories/, file:// or s3:// URL), or a folder of trajectory folders"

// resolve expands what the user typed into trajectories, in a stable order
// (each reference's trajectories sorted by id, references in the order
// given). The same trajectory named twice is exported once; two different
// trajectories with one id are an error (their files would collide).
func resolve(ctx context.Context, refs []string, opts Options) ([]*ref.Trajectory, error) {
	ropts := ref.Options{CacheDir: opts.CacheDir, Store: location.Options{Logger: opts.Logger}}
	var out []*ref.Trajectory
	seen := make(map[string]*ref.Trajectory)
	var lists [][]*ref.Trajectory
	for _, r := range refs {
		ts, err := resolveOne(ctx, r, opts.StoreURL, ropts)
		if err != nil {
			return nil, err
		}
		if len(ts) == 0 {
			return nil, replay.UsageError("%s holds no trajectories (want %s)", r, Forms)
		}
		lists = append(lists, ts)
	}
	if len(opts.StoreIDs) > 0 {
		ts, err := storeIDs(ctx, opts.StoreURL, opts.StoreIDs, ropts)
		if err != nil {
			return nil, err
		}
		if len(ts) == 0 {
			return nil, replay.UsageError("none of the %d trajectories asked for is in the store %s", len(opts.StoreIDs), opts.StoreURL)
		}
		lists = append(lists, ts)
	}
	for _, ts := range lists {
		for _, t := range ts {
			uri := t.Store.URI(t.TraceKey())
			if prev, ok := seen[t.ID]; ok {
				if prev.Store.URI(prev.TraceKey()) == uri {
					continue
				}
				return nil, replay.UsageError("two trajectories have the id %s (%s and %s): export them into different --out folders", t.ID, prev.Where, t.Where)
			}
			seen[t.ID] = t
			out = append(out, t)
		}
	}
	return out, nil
}

func resolveOne(ctx context.Context, r, storeURL string, ropts ref.Options) ([]*ref.Trajectory, error) {
	switch location.Scheme(r) {
	case "s3":
		if _, _, err := ref.SplitTrajectoryURL(r); err == nil {
			return single(ctx, r, storeURL, ropts)
		}
		return inStore(ctx, r, ropts)
	case "file":
		p, err := location.FilePath(r)
		if err != nil {
			return nil, replay.UsageError("%v", err)
		}
		r = p
	case "":
	default:
		return nil, replay.UsageError("reference %q: unsupported scheme (want %s)", r, Forms)
	}
	fi, err := os.Stat(r)
	if err != nil || !fi.IsDir() {
		return single(ctx, r, storeURL, ropts)
	}
	if isTrajectoryFolder(r) {
		return single(ctx, r, storeURL, ropts)
	}
	if _, err := os.Stat(filepath.Join(r, store.TrajectoriesDir)); err == nil {
		return inStore(ctx, r, ropts)
	}
	return folderTree(ctx, r, storeURL, ropts)
}

func single(ctx context.Context, r, storeURL string, ropts ref.Options) ([]*ref.Trajectory, error) {
	t, err := ref.Resolve(ctx, r, storeURL, ropts)
	if err != nil {
		return nil, replay.UsageError("%v", err)
	}
	return []*ref.Trajectory{t}, nil
}

func isTrajectoryFolder(dir string) bool {
	for _, name := range []string{store.TraceName, store.ChunksDir, store.BundleName, store.HistoryDir} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// inStore lists every trajectory of a store.
func inStore(ctx context.Context, raw string, ropts ref.Options) ([]*ref.Trajectory, error) {
	return listStore(ctx, raw, nil, ropts)
}

// storeIDs resolves the trajectories of ids that the store holds (an
// experiment's slots that never ran, or attempts never made, are not
// there and are skipped).
func storeIDs(ctx context.Context, raw string, ids []string, ropts ref.Options) ([]*ref.Trajectory, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	return listStore(ctx, raw, want, ropts)
}

// listStore lists a store's trajectories (those in want, when not nil)
// with one listing of trajectories/, a trajectory being an id with an
// agent_trace.json or trace chunks.
func listStore(ctx context.Context, raw string, want map[string]bool, ropts ref.Options) ([]*ref.Trajectory, error) {
	lopts := ropts.Store
	lopts.MustExist = true
	st, err := location.Open(ctx, raw, lopts)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, replay.UsageError("store %s: %v", raw, err)
		}
		return nil, err
	}
	ids := make(map[string]bool)
	err = st.List(ctx, store.TrajectoriesDir, func(fi store.FileInfo) error {
		id, rest, ok := strings.Cut(strings.TrimPrefix(fi.Key, store.TrajectoriesDir), "/")
		if ok && (rest == store.TraceName || strings.HasPrefix(rest, store.ChunksDir)) && (want == nil || want[id]) {
			ids[id] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list trajectories of %s: %w", raw, err)
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	out := make([]*ref.Trajectory, 0, len(sorted))
	for _, id := range sorted {
		t, err := ref.InStore(st, "store "+raw, id, ropts)
		if err != nil {
			continue // a key no trajectory id can have: not ours
		}
		out = append(out, t)
	}
	return out, nil
}

// folderTree finds trajectory folders (holding agent_trace.json) below dir.
func folderTree(ctx context.Context, dir, storeURL string, ropts ref.Options) ([]*ref.Trajectory, error) {
	var out []*ref.Trajectory
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != store.TraceName {
			return nil
		}
		ts, err := single(ctx, filepath.Dir(path), storeURL, ropts)
		if err != nil {
			return err
		}
		out = append(out, ts...)
		return filepath.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("look for trajectory folders in %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// fingerprint names the state of everything an export reads from t (the
// trace or its chunks, the bundles, the evaluation report) by key, size
// and modification time, without reading any of it: a store of a
// thousand trajectories is checked with a few listings.
func fingerprint(ctx context.Context, t *ref.Trajectory) (string, error) {
	h := sha256.New()
	add := func(fi store.FileInfo) {
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", fi.Key, fi.Size, fi.ModTime.UnixNano())
	}
	for _, key := range []string{t.TraceKey(), t.Prefix + store.EvaluationName, t.Prefix + store.BundleName, t.Prefix + store.ModelCallsName} {
		fi, err := t.Store.Stat(ctx, key)
		switch {
		case err == nil:
			add(fi)
		case errors.Is(err, store.ErrNotFound):
			h.Write([]byte(key + "\x00absent\n"))
		default:
			return "", fmt.Errorf("stat %s: %w", t.Store.URI(key), err)
		}
	}
	for _, prefix := range []string{t.Prefix + store.HistoryDir, t.Prefix + store.ChunksDir} {
		n := 0
		err := t.Store.List(ctx, prefix, func(fi store.FileInfo) error { n++; add(fi); return nil })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("list %s: %w", t.Store.URI(prefix), err)
		}
		h.Write([]byte(prefix + "\x00" + strconv.Itoa(n) + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
