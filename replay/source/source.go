// Package source finds a trajectory's trace and git history from what a
// user types — a trajectory id in a store, a trajectory folder, an
// agent_trace.json path, an s3://…/trajectories/<id> URL (all resolved by
// trace/store/ref, which also rebuilds a trace from its chunks and falls
// back to the history/ bundles of a run that did not finish), or loose
// --trace/--bundle files — and, when asked, the store evaluation results
// are cached in.
package source

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Request names a trajectory.
type Request struct {
	// Ref is a trajectory id in the store, a trajectory folder, an
	// agent_trace.json path or an s3://…/trajectories/<id> URL.
	Ref string
	// StoreURL is the store for bare ids and for the evaluation cache of
	// trajectories not read from a store (location.Choose applies the
	// defaults).
	StoreURL string
	// TracePath and BundlePath are loose files; they win over Ref.
	TracePath, BundlePath string
	// CacheDir holds downloads from remote stores (ref.Options.CacheDir).
	CacheDir string
	// Read says how much of the trace Open reads (default: all of it).
	Read TraceRead
	// LazyHistory leaves the bundles unread until the history is first
	// used (githistory.OpenLazy): a cached evaluate resolves its trees from
	// the bundles' commits and never indexes the packs.
	LazyHistory bool
}

// openHistory opens the bundles at paths as r says.
func (r Request) openHistory(ctx context.Context, paths ...string) (*githistory.History, error) {
	if r.LazyHistory {
		return githistory.OpenLazy(paths...)
	}
	return githistory.Open(ctx, paths...)
}

// TraceRead says how much of the trace Open reads into Trajectory.Trace.
type TraceRead int

const (
	// WholeTrace reads every part whole (evaluate).
	WholeTrace TraceRead = iota
	// TraceHeader reads only the header: Trajectory.Trace holds the
	// top-level fields and no turns, and the caller streams the trace
	// from Trajectory.TracePath itself (verify, checkout-part), so a long
	// trace is never held.
	TraceHeader
)

// readTrace reads the trace at path as r.Read says.
func (r Request) readTrace(path string) (*trace.Trace, error) {
	if r.Read == TraceHeader {
		return replay.ReadTraceHeader(path)
	}
	return replay.ReadTraceFile(path)
}

// Trajectory is an opened trajectory.
type Trajectory struct {
	ID    string
	Trace *trace.Trace
	// TracePath is the trace file on local disk (a download or a rebuild
	// for a trajectory in a remote store).
	TracePath string
	History   *githistory.History
	// Protected are local folders the trajectory was read from; outputs
	// must not be written inside them.
	Protected []string
	// Warnings say what was degraded (a trace rebuilt from chunks with a
	// gap, …).
	Warnings []string

	// evalStore/evalKey is where the evaluation report is kept ("" for
	// loose files).
	evalStore store.Store
	evalKey   string
	// cacheStore keeps the evaluation cache: the store the trajectory was
	// read from; nil until CacheStore opens the one cacheURL names.
	cacheStore store.Store
	cacheURL   string
	// enclosing is the root of the local store a trajectory folder sits
	// in (<root>/trajectories/<id>/), when it has an evaluation secret.
	enclosing string
}

// Verify checks the trajectory's trace against its history, streaming
// the trace from TracePath (open it with TraceHeader: nothing of the parts
// is held). It returns the problems and the number of parts read.
func (t *Trajectory) Verify(ctx context.Context) ([]replay.Problem, int, error) {
	f, err := os.Open(t.TracePath)
	if err != nil {
		return nil, 0, fmt.Errorf("verify %s: %w", t.ID, err)
	}
	defer f.Close()
	return replay.VerifyTrace(ctx, f, t.History)
}

// CacheStore returns the store the evaluation cache is kept in: the store
// the trajectory was read from, else (a folder, a file, loose files) the
// one Request.StoreURL names, opened — and, for a local folder, created —
// only now, so commands that never cache leave no store folder behind.
func (t *Trajectory) CacheStore(ctx context.Context) (store.Store, error) {
	if t.cacheStore == nil {
		st, err := location.Open(ctx, t.cacheURL, location.Options{})
		if err != nil {
			return nil, err
		}
		t.cacheStore = st
	}
	return t.cacheStore, nil
}

// Close releases the history's export clone.
func (t *Trajectory) Close() error {
	if t.History != nil {
		return t.History.Close()
	}
	return nil
}

// SaveEvaluation keeps an evaluate report beside the trajectory's objects
// (trajectories/<id>/evaluation.json in a store, evaluation.json in a
// trajectory folder), where traj report finds it. Loose files keep none.
func (t *Trajectory) SaveEvaluation(ctx context.Context, data []byte) error {
	if t.evalStore == nil {
		return nil
	}
	if err := t.evalStore.Save(ctx, t.evalKey, store.Bytes(data)); err != nil {
		return fmt.Errorf("keep evaluation of %s: %w", t.ID, err)
	}
	return nil
}

// KeepsEvaluation reports whether SaveEvaluation keeps the report beside
// the trajectory (false for loose files).
func (t *Trajectory) KeepsEvaluation() bool { return t.evalStore != nil }

// SaveEvaluationUnlessSame is SaveEvaluation when the report kept beside
// the trajectory is not data already.
func (t *Trajectory) SaveEvaluationUnlessSame(ctx context.Context, data []byte) error {
	if t.evalStore == nil {
		return nil
	}
	same := false
	err := t.evalStore.Load(ctx, t.evalKey, func(r io.Reader) error {
		kept, err := io.ReadAll(r)
		same = err == nil && bytes.Equal(kept, data)
		return err
	})
	if err == nil && same {
		return nil
	}
	return t.SaveEvaluation(ctx, data)
}

// Open resolves req.
func Open(ctx context.Context, req Request) (*Trajectory, error) {
	if req.TracePath != "" || req.BundlePath != "" {
		if req.TracePath == "" || req.BundlePath == "" {
			return nil, replay.UsageError("--trace and --bundle go together")
		}
		return openFiles(ctx, req)
	}
	if req.Ref == "" {
		return nil, replay.UsageError("give a trajectory REF (id, folder, agent_trace.json or s3:// URL; or --trajectory-id REF), or --trace and --bundle")
	}
	rt, err := ref.Resolve(ctx, req.Ref, req.StoreURL, ref.Options{CacheDir: req.CacheDir})
	if err != nil {
		// Resolve fails on what the user typed: an unknown id, a path
		// that is not a trajectory, a malformed URL.
		return nil, replay.UsageError("%v", err)
	}
	t := &Trajectory{ID: rt.ID, evalStore: rt.Store, evalKey: rt.EvaluationKey(), cacheURL: req.StoreURL}
	tracePath, rebuilt, err := rt.TracePath(ctx)
	switch {
	case errors.Is(err, ref.ErrPartial):
		t.Warnings = append(t.Warnings, err.Error())
	case err != nil:
		return nil, notFoundIsUsage(err)
	case rebuilt:
		t.Warnings = append(t.Warnings, fmt.Sprintf("trajectory %s has no %s; its trace was rebuilt from the uploaded chunks", rt.ID, store.TraceName))
	}
	if t.Trace, err = req.readTrace(tracePath); err != nil {
		return nil, err
	}
	t.TracePath = tracePath
	if t.Trace.TrajectoryID != "" {
		t.ID = t.Trace.TrajectoryID
	}
	bundles, err := rt.BundlePaths(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (the full bundle is written when the run ends; history/ bundles after each checkpoint)", err)
	}
	if t.History, err = req.openHistory(ctx, bundles...); err != nil {
		return nil, err
	}
	if lp, ok := store.AsLocal(rt.Store); ok {
		if p, err := lp.LocalPath(rt.Prefix + store.TraceName); err == nil {
			// The trajectory's folder, and the whole store it is in.
			t.protect(filepath.Dir(p))
			t.protect(strings.TrimSuffix(p, filepath.FromSlash(rt.Prefix+store.TraceName)))
		}
	}
	t.protectStore(req.StoreURL)
	// A trajectory read from a store caches there; one read from a folder
	// or file caches in the store StoreURL names (see CacheStore).
	if rt.Prefix != "" {
		t.cacheStore = rt.Store
	} else if dir := filepath.Dir(tracePath); filepath.Base(filepath.Dir(dir)) == strings.TrimSuffix(store.TrajectoriesDir, "/") {
		root := filepath.Dir(filepath.Dir(dir))
		if _, err := os.Stat(filepath.Join(root, store.EvalSecretName)); err == nil {
			t.enclosing = root
		}
	}
	return t, nil
}

// SecretStore is the store whose evaluation secret (EvalSecret) scores
// this trajectory as its run did: the store it was read from; for a
// trajectory folder inside a store's trajectories/, that store; else the
// cache's (CacheStore).
func (t *Trajectory) SecretStore(ctx context.Context) (store.Store, error) {
	if t.cacheStore == nil && t.enclosing != "" {
		st, err := location.Open(ctx, t.enclosing, location.Options{})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	return t.CacheStore(ctx)
}

func notFoundIsUsage(err error) error {
	if errors.Is(err, ref.ErrNotFound) {
		return replay.UsageError("%v", err)
	}
	return err
}

func openFiles(ctx context.Context, req Request) (*Trajectory, error) {
	tr, err := req.readTrace(req.TracePath)
	if err != nil {
		return nil, err
	}
	h, err := req.openHistory(ctx, req.BundlePath)
	if err != nil {
		return nil, err
	}
	t := &Trajectory{ID: tr.TrajectoryID, Trace: tr, TracePath: req.TracePath, History: h, cacheURL: req.StoreURL}
	for _, p := range []string{req.TracePath, req.BundlePath} {
		t.protect(filepath.Dir(p))
	}
	t.protectStore(req.StoreURL)
	return t, nil
}

// protect adds dir (made absolute) to Protected once.
func (t *Trajectory) protect(dir string) {
	if dir == "" {
		return
	}
	if abs, err := filepath.Abs(dir); err == nil && !slices.Contains(t.Protected, abs) {
		t.Protected = append(t.Protected, abs)
	}
}

// protectStore protects the local folder of the store the command names
// (--store, TRAJ_STORE or ./runs), whether or not the trajectory came
// from it: nothing replay writes belongs inside a store.
func (t *Trajectory) protectStore(storeURL string) {
	switch location.Scheme(storeURL) {
	case "":
		t.protect(storeURL)
	case "file":
		if p, err := location.FilePath(storeURL); err == nil {
			t.protect(p)
		}
	}
}

// Cache returns the evaluation cache kept in st at store.EvalCacheKey.
func Cache(st store.Store) replay.Cache {
	return &replay.BlobCache{Blobs: blobs{st}, KeyFunc: store.EvalCacheKey, SetKeyFunc: store.EvalCacheSetKey,
		IsNotFound: func(err error) bool { return errors.Is(err, store.ErrNotFound) }}
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

// Load implements replay.BlobLoader.
func (b blobs) Load(ctx context.Context, key string, fn func(io.Reader) error) error {
	return b.st.Load(ctx, key, fn)
}

func (b blobs) Put(ctx context.Context, key string, data []byte) error {
	return b.st.Save(ctx, key, store.Bytes(data))
}

// EvalSecret is the store's evaluation secret (store.EvalSecretName),
// made once from crypto/rand when the store has none: the cases' nonces
// derive from it (environment.RunOptions.Secret), so every evaluation of
// one artifact against this store, ground truth during the run, replay
// evaluate and a cluster's tasks alike, gives the same result case by
// case. It is read by traj on the host and never enters a sandbox. In a
// local store it is made with an exclusive link, so runs racing to make
// it (an experiment's first trajectories) all read the one kept; in a
// remote store the last of racing writers wins, and a run that made one
// of the others keeps it for its own evaluations.
func EvalSecret(ctx context.Context, st store.Store) ([]byte, error) {
	load := func() ([]byte, error) {
		var b []byte
		err := st.Load(ctx, store.EvalSecretName, func(r io.Reader) error {
			var err error
			b, err = io.ReadAll(io.LimitReader(r, 1<<10))
			return err
		})
		return b, err
	}
	b, err := load()
	if err == nil && len(b) >= 16 {
		return b, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("read the evaluation secret: %w", err)
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("make the evaluation secret: %w", err)
	}
	if lp, ok := st.(store.LocalPather); ok {
		if err := createOnce(lp, fresh); err != nil {
			return nil, err
		}
	} else if err := st.Save(ctx, store.EvalSecretName, store.Bytes(fresh)); err != nil {
		return nil, fmt.Errorf("keep the evaluation secret: %w", err)
	}
	if b, err = load(); err != nil || len(b) < 16 {
		return nil, fmt.Errorf("read the evaluation secret back: %v", err)
	}
	return b, nil
}

// createOnce writes data as the store's secret unless one is there: a
// hard link of a finished file either makes the name or fails.
func createOnce(lp store.LocalPather, data []byte) error {
	p, err := lp.LocalPath(store.EvalSecretName)
	if err != nil {
		return fmt.Errorf("locate the evaluation secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("keep the evaluation secret: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".evalsecret-*")
	if err != nil {
		return fmt.Errorf("keep the evaluation secret: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("keep the evaluation secret: %w", werr)
	}
	if err := os.Chmod(f.Name(), 0o600); err != nil {
		return fmt.Errorf("keep the evaluation secret: %w", err)
	}
	if err := os.Link(f.Name(), p); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("keep the evaluation secret: %w", err)
	}
	return nil
}
