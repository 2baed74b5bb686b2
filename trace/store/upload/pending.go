package upload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/trajlab/traj/trace/store"
)

// Pending is the record Flush leaves of objects it could not upload.
type Pending struct {
	Version int `json:"version"`
	// Store is the URI of the store's root, for messages only.
	Store   string    `json:"store"`
	Objects []Failure `json:"objects"`
}

// writePending writes the record atomically, or removes it when nothing
// is pending.
func writePending(path, storeURI string, failed []Failure) error {
	if len(failed) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(Pending{Version: 1, Store: storeURI, Objects: failed}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pending-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadPending reads a record written by Flush.
func ReadPending(path string) (Pending, error) {
	var p Pending
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("read pending uploads: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("read pending uploads %s: %w", path, err)
	}
	if p.Version != 1 {
		return p, fmt.Errorf("read pending uploads %s: unsupported version %d", path, p.Version)
	}
	return p, nil
}

// Sync uploads the objects recorded in pendingPath whose local file still
// exists, then rewrites the record with what is still missing (removing it
// when nothing is). Objects that came from memory (trace chunks) have no
// local file; they are dropped from the record when the trajectory's final
// agent_trace.json is among the objects uploaded, since it supersedes them,
// and reported otherwise. This is the core of a later `traj sync`.
func Sync(ctx context.Context, st store.Store, pendingPath string, opts Options) (Report, error) {
	p, err := ReadPending(pendingPath)
	if err != nil {
		return Report{}, err
	}
	opts.PendingFile = ""
	u := New(ctx, st, opts)
	var memOnly []Failure
	for _, f := range p.Objects {
		if f.LocalPath == "" {
			memOnly = append(memOnly, f)
			continue
		}
		if err := u.Enqueue(f.Key, store.File(f.LocalPath)); err != nil {
			u.mu.Lock()
			u.fail(f.Key, nil, err)
			u.mu.Unlock()
		}
	}
	rep, err := u.Close(ctx)
	if err != nil {
		return rep, err
	}
	uploaded := map[string]bool{}
	for _, f := range p.Objects {
		uploaded[f.Key] = f.LocalPath != ""
	}
	for _, f := range rep.Failed {
		uploaded[f.Key] = false
	}
	for _, f := range memOnly {
		if !supersededBy(f.Key, uploaded) {
			f.Err = "no local copy (in-memory object): " + f.Err
			rep.Failed = append(rep.Failed, f)
		}
	}
	if err := writePending(pendingPath, p.Store, rep.Failed); err != nil {
		return rep, fmt.Errorf("rewrite pending uploads: %w", err)
	}
	return rep, nil
}

// supersededBy reports whether key is a trace chunk of a trajectory whose
// agent_trace.json was uploaded.
func supersededBy(key string, uploaded map[string]bool) bool {
	dir := path.Dir(key) // trajectories/<id>/chunks
	if path.Base(dir)+"/" != store.ChunksDir {
		return false
	}
	return uploaded[path.Join(path.Dir(dir), store.TraceName)]
}
