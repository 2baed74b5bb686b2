package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Forms lists the references export accepts, for errors and help.
const Forms = ref.SetForms

// resolve expands what the user typed into trajectories (ref.ResolveAll:
// each reference's trajectories sorted by id, references in the order
// given, the same trajectory once), then opts.StoreIDs of the store. Two
// different trajectories with one id are an error (their files would
// collide).
func resolve(ctx context.Context, refs []string, opts Options) ([]*ref.Trajectory, error) {
	ropts := ref.Options{CacheDir: opts.CacheDir, Store: location.Options{Logger: opts.Logger}}
	var set ref.Set
	add := func(ts []*ref.Trajectory, err error) error {
		if err == nil {
			err = set.Add(ts...)
		}
		switch {
		case errors.Is(err, ref.ErrDuplicateID):
			return replay.UsageError("%v: export them into different --out folders", err)
		case errors.Is(err, ref.ErrBadReference):
			return replay.UsageError("%v", err)
		}
		return err
	}
	if len(refs) > 0 {
		if err := add(ref.ResolveAll(ctx, refs, opts.StoreURL, ropts)); err != nil {
			return nil, err
		}
	}
	if len(opts.StoreIDs) > 0 {
		ts, err := ref.ListStore(ctx, opts.StoreURL, opts.StoreIDs, ropts)
		if err == nil && len(ts) == 0 {
			return nil, replay.UsageError("none of the %d trajectories asked for is in the store %s", len(opts.StoreIDs), opts.StoreURL)
		}
		if err := add(ts, err); err != nil {
			return nil, err
		}
	}
	return set.Trajectories(), nil
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
	for _, key := range []string{t.TraceKey(), t.EvaluationKey(), t.Prefix + store.BundleName, t.Prefix + store.ModelCallsName} {
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
	// A running trajectory's call chunks (store.CallChunkKey); hashed only
	// when there are some, so fingerprints made before they existed hold.
	calls := t.Prefix + store.CallsDir
	err := t.Store.List(ctx, calls, func(fi store.FileInfo) error { add(fi); return nil })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("list %s: %w", t.Store.URI(calls), err)
	}
	// Fork sweeps of it (store.SweepKey), likewise only when there are some.
	sweeps := t.Prefix + store.SweepsDir
	err = t.Store.List(ctx, sweeps, func(fi store.FileInfo) error { add(fi); return nil })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("list %s: %w", t.Store.URI(sweeps), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
