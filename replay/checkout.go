package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trajlab/traj/trace"
)

// CheckoutRequest asks for the repository at one part.
type CheckoutRequest struct {
	Part int
	Dest string
	// Force replaces the contents of a non-empty Dest.
	Force bool
	// Protected are folders Dest must not be inside of (the trajectory's
	// source folder, its store, the store the command names), so a
	// checkout never writes over its input.
	Protected []string
}

// CheckoutSummary is the JSON summary checkout-part writes.
type CheckoutSummary struct {
	TrajectoryID string `json:"trajectory_id"`
	Part         int    `json:"part"`
	Commit       string `json:"commit"`
	Dest         string `json:"dest"`
}

// ErrUsage marks errors caused by the request (bad part, bad destination,
// unknown trajectory), as opposed to unreadable inputs; test with
// errors.Is.
var ErrUsage = errors.New("usage error")

// UsageError formats a message that errors.Is matches with ErrUsage.
func UsageError(format string, args ...any) error {
	return &usageErr{fmt.Sprintf(format, args...)}
}

// Usage marks err as caused by the request: errors.Is matches it with
// ErrUsage, and it unwraps to err (nil stays nil).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageWrap{err}
}

type usageWrap struct{ err error }

func (e *usageWrap) Error() string        { return e.err.Error() }
func (e *usageWrap) Unwrap() error        { return e.err }
func (e *usageWrap) Is(target error) bool { return target == ErrUsage }

type usageErr struct{ msg string }

func (e *usageErr) Error() string        { return e.msg }
func (e *usageErr) Is(target error) bool { return target == ErrUsage }

// CommitForPart returns part's effective commit, or an error giving the
// valid range.
func CommitForPart(tr *trace.Trace, part int) (string, error) {
	parts, commits, err := PartCommits(tr)
	if err != nil {
		return "", err
	}
	c, ok := commits[part]
	if !ok {
		return "", UsageError("part %d is out of range: trajectory %s has parts %d..%d", part, tr.TrajectoryID, parts[0], parts[len(parts)-1])
	}
	return c, nil
}

// CommitForPartIn is CommitForPart reading the trace from r as it streams
// by: nothing of the other parts is held, so the memory it takes does not
// grow with the trace (checkout-part of a 50,000-part trace).
func CommitForPartIn(r io.Reader, part int) (string, error) {
	var id, commit string
	found := false
	first, last := 0, 0
	seen := map[int]bool{}
	err := trace.Scan(r, trace.Visitor{
		OnHeader: func(h *trace.Header) error { id = h.TrajectoryID; return nil },
		OnPart: func(_ int, p *trace.Part) error {
			c, err := effectiveCommit(p)
			if err != nil {
				return err
			}
			if seen[p.Part] {
				return fmt.Errorf("part %d appears twice in the trace", p.Part)
			}
			seen[p.Part] = true
			if len(seen) == 1 || p.Part < first {
				first = p.Part
			}
			last = max(last, p.Part)
			if p.Part == part {
				commit, found = c, true
			}
			return nil
		},
		OnEnd: func(t *trace.Trace) error {
			if t.TrajectoryID != "" {
				id = t.TrajectoryID
			}
			return nil
		},
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("read trace: %w", err)
	case len(seen) == 0:
		return "", fmt.Errorf("trace %s has no parts", id)
	case !found:
		return "", UsageError("part %d is out of range: trajectory %s has parts %d..%d", part, id, first, last)
	}
	return commit, nil
}

// CommitForPartAt is CommitForPart for the trace file at path, read
// through its part index (trace.LoadPartIndex, rebuilt when missing or
// stale; the file is left as it is): the index and one part are read,
// not the trace. id names the
// trajectory in errors. A trace whose parts are not 1..N in order, or
// whose part does not match the index, is read whole by CommitForPartIn,
// which says what is wrong with it.
func CommitForPartAt(path, id string, part int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	ix, err := trace.LoadPartIndex(path)
	if err != nil {
		return CommitForPartIn(f, part) // says what is wrong with the trace
	}
	es := ix.Entries
	for i, e := range es {
		if e.Part != i+1 {
			return CommitForPartIn(f, part)
		}
	}
	if len(es) == 0 {
		return "", fmt.Errorf("trace %s has no parts", id)
	}
	e, ok := ix.Find(part)
	if !ok {
		return "", UsageError("part %d is out of range: trajectory %s has parts %d..%d", part, id, es[0].Part, es[len(es)-1].Part)
	}
	raw, err := ix.ReadPart(f, e)
	if err != nil {
		return CommitForPartIn(io.NewSectionReader(f, 0, ix.TraceSize), part)
	}
	got, err := trace.NewPartEntry(e.Turn, e.Off, raw)
	if err != nil {
		return "", fmt.Errorf("read trace: %w", err)
	}
	if got.Commit == "" {
		return "", fmt.Errorf("part %d has no git_commit", part)
	}
	return got.Commit, nil
}

// CheckoutPart writes the repository at req.Part into req.Dest.
func CheckoutPart(ctx context.Context, tr *trace.Trace, h History, req CheckoutRequest) (*CheckoutSummary, error) {
	commit, err := CommitForPart(tr, req.Part)
	if err != nil {
		return nil, err
	}
	return CheckoutCommit(ctx, tr.TrajectoryID, commit, h, req)
}

// CheckoutCommit is CheckoutPart once the part's commit is known (from
// CommitForPart or CommitForPartIn); id names the trajectory in the
// summary.
func CheckoutCommit(ctx context.Context, id, commit string, h History, req CheckoutRequest) (*CheckoutSummary, error) {
	dest, err := filepath.Abs(req.Dest)
	if err != nil {
		return nil, fmt.Errorf("resolve destination %q: %w", req.Dest, err)
	}
	for _, p := range req.Protected {
		if p == "" {
			continue
		}
		if inside(dest, p) {
			return nil, UsageError("destination %s is inside the trajectory's source folder or a store (%s); choose a folder outside it", dest, p)
		}
		if inside(p, dest) {
			return nil, UsageError("destination %s holds the trajectory's source folder or a store (%s); choose a folder outside it", dest, p)
		}
	}
	if req.Force {
		if err := safeToClear(dest); err != nil {
			return nil, err
		}
	}
	ok, err := h.HasCommit(ctx, commit)
	if err != nil {
		return nil, fmt.Errorf("look up commit %s: %w", commit, err)
	}
	if !ok {
		return nil, fmt.Errorf("commit %s for part %d is not in the bundle (a bundle written before the run ended may lack later parts)", commit, req.Part)
	}
	created, err := prepareDest(dest, req.Force)
	if err != nil {
		return nil, err
	}
	if err := h.Checkout(ctx, commit, dest); err != nil {
		err = fmt.Errorf("check out part %d (commit %s) into %s: %w", req.Part, commit, dest, err)
		// Leave nothing behind: the folders this call made go, a
		// destination that existed is emptied again.
		if created != "" {
			if rerr := os.RemoveAll(created); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove %s: %w", created, rerr))
			}
		} else if cerr := clearDir(dest); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return &CheckoutSummary{TrajectoryID: id, Part: req.Part, Commit: commit, Dest: dest}, nil
}

// safeToClear refuses --force on folders whose contents are never a
// checkout's to delete: the filesystem root, the home folder, and the
// current folder or any folder above it.
func safeToClear(dest string) error {
	if filepath.Dir(dest) == dest {
		return UsageError("refusing --force on %s: it is the filesystem root", dest)
	}
	if home, err := os.UserHomeDir(); err == nil && resolve(home) == resolve(dest) {
		return UsageError("refusing --force on %s: it is the home folder", dest)
	}
	if wd, err := os.Getwd(); err == nil && inside(wd, dest) {
		return UsageError("refusing --force on %s: it holds the current folder %s", dest, wd)
	}
	return nil
}

// prepareDest makes dest an empty folder: it must be absent or empty,
// unless force, which removes what is in it. created is the topmost folder
// it made ("" when dest existed), for removal if the checkout fails.
func prepareDest(dest string, force bool) (created string, err error) {
	entries, err := os.ReadDir(dest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		created = dest
		for p := filepath.Dir(dest); p != filepath.Dir(p); p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			created = p
		}
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return "", fmt.Errorf("create destination %s: %w", dest, err)
		}
		return created, nil
	case err != nil:
		return "", fmt.Errorf("read destination %s: %w", dest, err)
	}
	if len(entries) == 0 {
		return "", nil
	}
	if !force {
		return "", UsageError("destination %s is not empty (%d entries); choose an empty folder or pass --force to replace its contents", dest, len(entries))
	}
	return "", clearDir(dest)
}

// clearDir removes what is in dir, keeping dir.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clear destination %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("clear destination %s: %w", dir, err)
		}
	}
	return nil
}

// inside reports whether path is dir or below it (both cleaned, absolute;
// symlinks resolved where they exist).
func inside(path, dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	path, dir = resolve(path), resolve(dir)
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

// resolve follows symlinks in the longest existing prefix of p.
func resolve(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
