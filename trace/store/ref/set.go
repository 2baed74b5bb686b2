package ref

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
)

// SetForms lists what names a set of trajectories (Expand), for errors
// and help.
const SetForms = Forms + ", a store (folder with trajectories/, file:// or s3:// URL), or a folder of trajectory folders"

// ErrBadReference wraps the errors of a set's references that are the
// user's to fix (an unknown scheme, a REF that does not resolve, a store
// with nothing in it, one id for two trajectories), so a command can map
// them to a usage error; a store that fails to answer is not one.
var ErrBadReference = errors.New("bad trajectory reference")

// ErrDuplicateID (with ErrBadReference) is two different trajectories
// with one id in a Set.
var ErrDuplicateID = errors.New("two trajectories have one id")

// badRef is a user's error: err, also matching ErrBadReference.
type badRef struct{ err error }

func (e badRef) Error() string   { return e.err.Error() }
func (e badRef) Unwrap() []error { return []error{e.err, ErrBadReference} }

// duplicate is ErrDuplicateID with its message.
type duplicate struct{ msg string }

func (e duplicate) Error() string   { return e.msg }
func (e duplicate) Unwrap() []error { return []error{ErrDuplicateID, ErrBadReference} }

func bad(format string, args ...any) error { return badRef{fmt.Errorf(format, args...)} }

// IsTrajectoryFolder is the one rule for "dir is a trajectory folder": it
// holds a trace or the chunks to rebuild one (the rule List applies to a
// store's ids). Bundles alone are no trajectory: nothing could be read
// without the trace.
func IsTrajectoryFolder(dir string) bool {
	for _, name := range []string{store.TraceName, store.ChunksDir} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// IsStoreFolder reports whether dir is a local store: a folder holding
// trajectories/.
func IsStoreFolder(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, store.TrajectoriesDir))
	return err == nil && fi.IsDir()
}

// Lister is the part of a store List needs.
type Lister interface {
	List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error
}

// Listed is what one listing of trajectories/ says about a trajectory.
type Listed struct {
	ID string
	// Trace is agent_trace.json's size and time (HasTrace).
	Trace                     store.FileInfo
	HasTrace, HasChunks       bool
	HasSummary, HasEvaluation bool
	// Sweeps are the keys of its fork sweeps' results (store.SweepKey).
	Sweeps []string
}

// IsTrajectory is the one rule: a trace or the chunks to rebuild one.
func (l Listed) IsTrajectory() bool { return l.HasTrace || l.HasChunks }

// List lists the trajectories of st with one listing of trajectories/, in
// id order. A trajectory is an id with a trace or its chunks (the rule
// IsTrajectoryFolder applies to folders); ids no trajectory can have are
// skipped.
func List(ctx context.Context, st Lister) ([]Listed, error) {
	m := map[string]*Listed{}
	err := st.List(ctx, store.TrajectoriesDir, func(fi store.FileInfo) error {
		id, name, ok := strings.Cut(strings.TrimPrefix(fi.Key, store.TrajectoriesDir), "/")
		if !ok {
			return nil
		}
		l := m[id]
		if l == nil {
			l = &Listed{ID: id}
			m[id] = l
		}
		switch {
		case name == store.TraceName:
			l.HasTrace, l.Trace = true, fi
		case strings.HasPrefix(name, store.ChunksDir):
			l.HasChunks = true
		case name == store.SummaryName:
			l.HasSummary = true
		case name == store.EvaluationName:
			l.HasEvaluation = true
		case strings.HasPrefix(name, store.SweepsDir) && strings.HasSuffix(name, ".json"):
			l.Sweeps = append(l.Sweeps, fi.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list trajectories: %w", err)
	}
	out := make([]Listed, 0, len(m))
	for id, l := range m {
		if l.IsTrajectory() && store.ValidateID(id) == nil {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Lookup applies List's rule to one id of st without listing the store:
// the trace's Stat, else one listing of its chunks. ok is false when st
// holds no trajectory id. Only HasTrace, Trace and HasChunks are set.
func Lookup(ctx context.Context, st store.Store, id string) (l Listed, ok bool, err error) {
	l.ID = id
	fi, err := st.Stat(ctx, store.TraceKey(id))
	switch {
	case err == nil:
		l.HasTrace, l.Trace = true, fi
		return l, true, nil
	case !errors.Is(err, store.ErrNotFound):
		return l, false, fmt.Errorf("look up trajectory %s: %w", id, err)
	}
	err = st.List(ctx, store.ChunksPrefix(id), func(store.FileInfo) error { return errStop })
	switch {
	case errors.Is(err, errStop):
		l.HasChunks = true
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return l, false, fmt.Errorf("look up trajectory %s: list chunks: %w", id, err)
	}
	return l, l.HasChunks, nil
}

// ListStore opens the store storeURL names (never creating it) and
// resolves its trajectories (List), only those in ids when ids is not nil
// (ids the store lacks are skipped: an experiment's slots that never ran).
func ListStore(ctx context.Context, storeURL string, ids []string, opts Options) ([]*Trajectory, error) {
	lopts := opts.Store
	lopts.MustExist = true
	st, err := location.Open(ctx, storeURL, lopts)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, bad("store %s: %w", storeURL, err)
		}
		return nil, err
	}
	listed, err := List(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", storeURL, err)
	}
	var want map[string]bool
	if ids != nil {
		want = make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
	}
	out := make([]*Trajectory, 0, len(listed))
	for _, l := range listed {
		if want != nil && !want[l.ID] {
			continue
		}
		t, err := InStore(st, "store "+storeURL, l.ID, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// FolderTree resolves the trajectory folders (IsTrajectoryFolder) at or
// below dir, in id order; a trajectory folder's own subfolders (history/,
// chunks/, logs/) are not searched, nor .git folders.
func FolderTree(dir string, opts Options) ([]*Trajectory, error) {
	var out []*Trajectory
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !IsTrajectoryFolder(path) {
			return nil
		}
		t, err := fromFolder(path, opts)
		if err != nil {
			return err
		}
		out = append(out, t)
		return filepath.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("look for trajectory folders in %s: %w", dir, err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Expand resolves one reference of a set into its trajectories: a REF
// (Resolve), a store (a folder holding trajectories/, or a file:// or
// s3:// store URL: every trajectory List finds), or a folder of
// trajectory folders (FolderTree). storeURL is the store of bare ids.
func Expand(ctx context.Context, r, storeURL string, opts Options) ([]*Trajectory, error) {
	switch location.Scheme(r) {
	case "s3":
		if _, _, err := SplitTrajectoryURL(r); err == nil {
			return single(ctx, r, storeURL, opts)
		}
		return ListStore(ctx, r, nil, opts)
	case "file":
		p, err := location.FilePath(r)
		if err != nil {
			return nil, badRef{err}
		}
		r = p
	case "":
	default:
		return nil, bad("reference %q: unsupported scheme (want %s)", r, SetForms)
	}
	fi, err := os.Stat(r)
	switch {
	case err != nil || !fi.IsDir() || IsTrajectoryFolder(r):
		return single(ctx, r, storeURL, opts)
	case IsStoreFolder(r):
		return ListStore(ctx, r, nil, opts)
	}
	return FolderTree(r, opts)
}

func single(ctx context.Context, r, storeURL string, opts Options) ([]*Trajectory, error) {
	t, err := Resolve(ctx, r, storeURL, opts)
	if err != nil {
		return nil, badRef{err}
	}
	return []*Trajectory{t}, nil
}

// Set gathers trajectories from many references, each once.
type Set struct {
	list []*Trajectory
	seen map[string]*Trajectory
}

// Add adds ts in order. The same trajectory added again is skipped; another
// trajectory with an id already in the set is an error (ErrBadReference):
// the two would share every file named by id.
func (s *Set) Add(ts ...*Trajectory) error {
	if s.seen == nil {
		s.seen = make(map[string]*Trajectory)
	}
	for _, t := range ts {
		if prev, ok := s.seen[t.ID]; ok {
			if prev.Store.URI(prev.TraceKey()) == t.Store.URI(t.TraceKey()) {
				continue
			}
			return duplicate{fmt.Sprintf("two trajectories have the id %s (%s and %s)", t.ID, prev.Where, t.Where)}
		}
		s.seen[t.ID] = t
		s.list = append(s.list, t)
	}
	return nil
}

// Trajectories are the set's trajectories in the order added.
func (s *Set) Trajectories() []*Trajectory { return s.list }

// ResolveAll expands every reference (Expand) into one Set, in a stable
// order: each reference's trajectories by id, references in the order
// given. A reference holding no trajectory is an error (ErrBadReference).
func ResolveAll(ctx context.Context, refs []string, storeURL string, opts Options) ([]*Trajectory, error) {
	var s Set
	for _, r := range refs {
		ts, err := Expand(ctx, r, storeURL, opts)
		if err != nil {
			return nil, err
		}
		if len(ts) == 0 {
			return nil, bad("%s holds no trajectories (want %s)", r, SetForms)
		}
		if err := s.Add(ts...); err != nil {
			return nil, err
		}
	}
	return s.Trajectories(), nil
}
