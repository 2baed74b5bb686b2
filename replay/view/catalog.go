package view

import (
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/ref"
)

// catalog is the store being viewed: its trajectories, each opened on
// first use and kept up to date as its trace grows.
type catalog struct {
	storeURL string
	st       store.Store
	cacheDir string
	refOpts  ref.Options
	logger   *slog.Logger
	// localEvery and remoteEvery bound how often a trajectory's trace is
	// looked at again (a remote one without its final trace is rebuilt
	// from chunks each time).
	localEvery, remoteEvery time.Duration

	mu    sync.Mutex
	trajs map[string]*trajectory
}

// trajectory is one trajectory being viewed.
type trajectory struct {
	id  string
	cat *catalog

	mu        sync.Mutex
	rt        *ref.Trajectory
	snap      *snapshot
	checked   time.Time
	remote    bool
	eval      *evalData
	evalStamp string
	calls     *callIndex
	// rerun is a rerun's comparison line (rerun.json), rerunStamp its
	// size and time.
	rerun      string
	rerunStamp string

	gitMu sync.Mutex // guards git
	git   *gitRepo
}

// snapshot is an immutable view of a trajectory at one moment: handlers
// work on it without holding locks while the next refresh builds another.
type snapshot struct {
	ix   *Index
	path string // local agent_trace.json the index describes
	// warning says what is degraded (a trace rebuilt from chunks).
	warning string
	eval    *evalData
	// calls is the model gateway's record; nil when there is none.
	calls *callIndex
	// rerun is a rerun's comparison line ("": none stored).
	rerun string
	// st and prefix locate the trajectory's other objects.
	st     store.Store
	prefix string
}

func (c *catalog) get(id string) (*trajectory, error) {
	if err := store.ValidateID(id); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.trajs[id]; ok {
		return t, nil
	}
	t := &trajectory{id: id, cat: c}
	c.trajs[id] = t
	return t, nil
}

// ids lists the trajectories in the store (ref.List: a trace or its
// chunks).
func (c *catalog) ids(ctx context.Context) ([]string, error) {
	listed, err := ref.List(ctx, c.st)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.storeURL, err)
	}
	out := make([]string, len(listed))
	for i, l := range listed {
		out[i] = l.ID
	}
	return out, nil
}

// current returns an up-to-date snapshot, refreshing the trace and the
// evaluation when they may have changed.
func (t *trajectory) current(ctx context.Context) (*snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	every := t.cat.localEvery
	if t.remote {
		every = t.cat.remoteEvery
	}
	if t.snap != nil && (time.Since(t.checked) < every || t.finishedRemote()) {
		return t.snap, nil
	}
	t.checked = time.Now()
	if err := t.refresh(ctx); err != nil {
		if t.snap != nil {
			// Keep serving what was read: a trace being rewritten or a
			// store hiccup must not blank the page.
			t.cat.logger.Warn("refresh trajectory", "trajectory", t.id, "err", err)
			return t.snap, nil
		}
		return nil, err
	}
	return t.snap, nil
}

// finishedRemote: a remote trajectory whose final trace was read does not
// change any more.
func (t *trajectory) finishedRemote() bool {
	return t.remote && t.snap != nil && t.snap.ix.End != nil && t.snap.warning == ""
}

func (t *trajectory) refresh(ctx context.Context) error {
	if t.rt == nil {
		rt, err := ref.Resolve(ctx, t.id, t.cat.storeURL, t.cat.refOpts)
		if err != nil {
			return err
		}
		t.rt = rt
		_, local := store.AsLocal(rt.Store)
		t.remote = !local
	}
	path, rebuilt, err := t.rt.TracePath(ctx)
	warning := ""
	switch {
	case errors.Is(err, ref.ErrPartial):
		warning = err.Error()
	case err != nil:
		return err
	case rebuilt:
		warning = "no " + store.TraceName + " yet: the trace was rebuilt from the uploaded chunks"
	}
	var ix *Index
	if t.snap != nil && t.snap.path == path {
		c := *t.snap.ix
		ix = &c
	} else {
		ix = t.cat.loadIndex(t.rt.Store.URI(t.rt.Prefix + store.TraceName))
	}
	fullScans, wasEnded := ix.FullScans, ix.End != nil
	// The evaluation is read while the trace is indexed: on a cold start
	// both are a full read, and the first rows wait for both.
	evalDone := make(chan error, 1)
	go func() { evalDone <- t.refreshEval(ctx) }()
	if err := updateFromFile(ix, path); err != nil {
		<-evalDone
		return err
	}
	// Keep the index for the next start when it cost a full read or the
	// trajectory just ended; resumed reads of a live trace are cheap.
	if t.snap == nil || ix.FullScans != fullScans || ix.End != nil && !wasEnded {
		t.cat.saveIndex(t.rt.Store.URI(t.rt.Prefix+store.TraceName), ix)
	}
	if err := <-evalDone; err != nil {
		t.cat.logger.Warn("ignore evaluation report", "trajectory", t.id, "err", err)
	}
	if err := t.refreshCalls(ctx); err != nil {
		t.cat.logger.Warn("ignore model-call record", "trajectory", t.id, "err", err)
	}
	if ix.Header.RerunOf != nil {
		if err := t.refreshRerun(ctx); err != nil {
			t.cat.logger.Warn("ignore rerun comparison", "trajectory", t.id, "err", err)
		}
	}
	t.snap = &snapshot{ix: ix, path: path, warning: warning, eval: t.eval, calls: t.calls, rerun: t.rerun, st: t.rt.Store, prefix: t.rt.Prefix}
	return nil
}

func updateFromFile(ix *Index, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat trace: %w", err)
	}
	if err := ix.Update(f, fi.Size()); err != nil {
		return fmt.Errorf("index trace %s: %w", path, err)
	}
	return nil
}

// refreshEval (re)loads the stored evaluate report when it changed: the
// reduction a viewer kept in the cache folder for this state of the
// report, else the report read for what the pages show (evalReport).
func (t *trajectory) refreshEval(ctx context.Context) error {
	stamp, err := t.rt.EvaluationStamp(ctx)
	if err != nil || stamp == t.evalStamp {
		return err
	}
	if stamp == "" {
		t.eval, t.evalStamp = nil, ""
		return nil
	}
	uri := t.rt.Store.URI(t.rt.EvaluationKey())
	if e := t.cat.loadEval(uri, stamp); e != nil {
		t.eval, t.evalStamp = e, stamp
		return nil
	}
	var rep evalReport
	found, err := t.rt.LoadEvaluation(ctx, &rep)
	if err != nil {
		return err
	}
	if !found { // removed since the stamp was taken
		t.eval, t.evalStamp = nil, ""
		return nil
	}
	t.eval, t.evalStamp = newEvalData(&rep.out), stamp
	t.cat.saveEval(uri, stamp, t.eval)
	return nil
}

// refreshCalls (re)reads the model gateway's record when it changed.
func (t *trajectory) refreshCalls(ctx context.Context) error {
	fi, err := store.StatRecord(ctx, t.rt.Store, t.rt.Prefix, store.ModelCallsName)
	if errors.Is(err, store.ErrNotFound) {
		t.calls = nil
		return nil
	}
	if err != nil {
		return err
	}
	if t.calls != nil && t.calls.stamp == fmt.Sprint(fi.Size, fi.ModTime.UnixNano()) {
		return nil
	}
	ci, err := loadCalls(ctx, t.rt.Store, t.rt.Prefix)
	if err != nil {
		return err
	}
	t.calls = ci
	return nil
}

// refreshRerun (re)reads a rerun's comparison when it changed.
func (t *trajectory) refreshRerun(ctx context.Context) error {
	fi, err := t.rt.Store.Stat(ctx, t.rt.Prefix+store.RerunName)
	if errors.Is(err, store.ErrNotFound) {
		t.rerun, t.rerunStamp = "", ""
		return nil
	}
	if err != nil {
		return err
	}
	stamp := fmt.Sprint(fi.Size, fi.ModTime.UnixNano())
	if stamp == t.rerunStamp {
		return nil
	}
	line, err := loadRerun(ctx, t.rt.Store, t.rt.Prefix)
	if err != nil {
		return err
	}
	t.rerun, t.rerunStamp = line, stamp
	return nil
}

// indexCacheVersion changes whenever Index's encoding does.
const indexCacheVersion = "view-index-6"

func (c *catalog) indexCachePath(uri string) string {
	if c.cacheDir == "" {
		return ""
	}
	h := sha256.Sum256([]byte(indexCacheVersion + "\x00" + uri))
	return filepath.Join(c.cacheDir, "index", hex.EncodeToString(h[:12])+".gob")
}

// loadIndex returns the cached index of the trace at uri, or an empty one.
// A stale cached index is harmless: Update resumes from it only when the
// bytes of its last part are unchanged, else reads the trace again.
func (c *catalog) loadIndex(uri string) *Index {
	ix := &Index{}
	p := c.indexCachePath(uri)
	if p == "" {
		return ix
	}
	f, err := os.Open(p)
	if err != nil {
		return ix
	}
	defer f.Close()
	if err := gob.NewDecoder(f).Decode(ix); err != nil {
		c.logger.Debug("ignore cached index", "path", p, "err", err)
		return &Index{}
	}
	ix.FromCache = true
	return ix
}

// saveIndex keeps ix for the next start of the viewer.
func (c *catalog) saveIndex(uri string, ix *Index) {
	p := c.indexCachePath(uri)
	if p == "" || len(ix.Parts) == 0 {
		return
	}
	if err := atomicfile.Write(p, func(w io.Writer) error { return gob.NewEncoder(w).Encode(ix) }); err != nil {
		c.logger.Debug("cache index", "err", err)
	}
}

// evalCacheVersion changes whenever evalCache's encoding or the reduction
// (newEvalData, report.EvaluationSeries) does.
const evalCacheVersion = "view-eval-2"

// evalCache is a trajectory's reduced evaluation as the cache folder keeps
// it, with the report's stamp it was read at.
type evalCache struct {
	Stamp  string
	Series report.Series
	Tests  []testRow
	Fixed  map[int][]string
	Labels []labels.Label
}

func (c *catalog) evalCachePath(uri string) string {
	if c.cacheDir == "" {
		return ""
	}
	h := sha256.Sum256([]byte(evalCacheVersion + "\x00" + uri))
	return filepath.Join(c.cacheDir, "eval", hex.EncodeToString(h[:12])+".gob")
}

// loadEval returns the cached reduction of the report at uri when it was
// made from the report's current state (stamp), else nil.
func (c *catalog) loadEval(uri, stamp string) *evalData {
	p := c.evalCachePath(uri)
	if p == "" {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ec evalCache
	if err := gob.NewDecoder(f).Decode(&ec); err != nil {
		c.logger.Debug("ignore cached evaluation", "path", p, "err", err)
		return nil
	}
	if ec.Stamp != stamp {
		return nil
	}
	e := &evalData{series: ec.Series, tests: ec.Tests, fixed: ec.Fixed, labels: ec.Labels}
	e.normalize()
	return e
}

// saveEval keeps e, read from the report at uri in state stamp, for the
// next start of the viewer.
func (c *catalog) saveEval(uri, stamp string, e *evalData) {
	p := c.evalCachePath(uri)
	if p == "" {
		return
	}
	ec := evalCache{Stamp: stamp, Series: e.series, Tests: e.tests, Fixed: e.fixed, Labels: e.labels}
	if err := atomicfile.Write(p, func(w io.Writer) error { return gob.NewEncoder(w).Encode(&ec) }); err != nil {
		c.logger.Debug("cache evaluation", "err", err)
	}
}
