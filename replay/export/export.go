package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/ref"
)

// SchemaVersion versions the exported tables and the ATIF mapping: a
// renamed or retyped column, or a changed meaning, is a new version; a
// new nullable column is not. It is written into every Parquet file's
// metadata ("traj.export.schema_version"), into ATIF's extra, and into
// the manifest; an export folder of another version is rewritten whole.
const SchemaVersion = "3"

// Formats.
const (
	FormatParquet = "parquet"
	FormatATIF    = "atif"
)

// ManifestName is the file in the output folder that records what was
// exported, from what, and the fingerprint used to skip unchanged
// trajectories.
const ManifestName = "export.json"

// Defaults.
const (
	DefaultValueCap      = 64 << 10
	DefaultRowGroupBytes = 32 << 20
)

// Options configure Run.
type Options struct {
	Format string
	// Out is the output folder.
	Out string
	// StoreURL is the store bare trajectory ids are looked up in.
	StoreURL string
	// StoreIDs are more trajectories of StoreURL (an experiment's):
	// those the store holds are exported, the others skipped.
	StoreIDs []string
	// ValueCap caps each text value of the parts table (tool input and
	// output, text, errors) in bytes; the full length is kept beside it.
	// 0 means DefaultValueCap; negative means no cap.
	ValueCap int
	// RowGroupBytes closes a Parquet row group when the rows buffered
	// reach it (0: DefaultRowGroupBytes).
	RowGroupBytes int64
	// Full rewrites every trajectory, changed or not.
	Full bool
	// Prune removes exported trajectories the references no longer name.
	Prune bool
	// Workers is how many trajectories are exported at once (0: 2).
	Workers int
	// CacheDir holds downloads from remote stores.
	CacheDir string
	// Version is traj's version, recorded in every file.
	Version string
	Logger  *slog.Logger
	// Now is the clock (tests pin it).
	Now func() time.Time

	// codec compresses every Parquet page of a Run.
	codec *zstdCodec
}

// Summary says what Run did.
type Summary struct {
	Format    string
	Out       string
	Exported  int
	Unchanged int
	Failed    int
	Pruned    int
	// Rows counts rows written per table (parquet) or documents (atif).
	Rows     map[string]int64
	Duration time.Duration
}

// Manifest is the export folder's record (ManifestName).
type Manifest struct {
	Format        string                    `json:"format"`
	SchemaVersion string                    `json:"schema_version"`
	ValueCap      int                       `json:"value_cap_bytes,omitempty"`
	Tables        []string                  `json:"tables,omitempty"`
	Trajectories  map[string]*ManifestEntry `json:"trajectories"`
}

// ManifestEntry is one exported trajectory.
type ManifestEntry struct {
	Source      string           `json:"source"`
	Fingerprint string           `json:"fingerprint"`
	ExportedAt  string           `json:"exported_at"`
	Rows        map[string]int64 `json:"rows"`
	Warnings    []string         `json:"warnings,omitempty"`
}

// input is one trajectory opened for export.
type input struct {
	id        string
	where     string
	tracePath string
	rebuilt   bool
	eval      *replay.Output
	sweeps    []*sweepvalue.Result
	hist      *githistory.History
	warnings  []string
	logger    *slog.Logger
	// store and prefix hold the trajectory's other objects (the model-call
	// record).
	store  store.Store
	prefix string
}

func (in *input) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	in.warnings = append(in.warnings, msg)
	in.logger.Warn(msg, "trajectory", in.id)
}

// Run exports the trajectories refs name into opts.Out. Unchanged
// trajectories (same fingerprint, same schema version and options) are
// skipped unless opts.Full; the manifest is saved as the export goes, so
// an interrupted export keeps what it finished. A trajectory that
// cannot be exported is reported and the others still are; Run then
// returns an error naming how many failed.
func Run(ctx context.Context, refs []string, opts Options) (*Summary, error) {
	start := time.Now()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	log := opts.Logger
	trajs, err := resolve(ctx, refs, opts)
	if err != nil {
		return nil, err
	}
	// Outputs never change their inputs: no export inside a store or a
	// trajectory folder it reads.
	if err := replay.CheckOutput(filepath.Join(opts.Out, ManifestName), protectedFolders(trajs)); err != nil {
		return nil, err
	}
	created := missingFolders(opts.Out)
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create output folder: %w", err)
	}
	// An export that writes nothing leaves no folder behind.
	defer removeEmpty(opts, created)
	m, err := loadManifest(opts)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Format: opts.Format, Out: opts.Out, Rows: map[string]int64{}}
	// The manifest is saved at most once a second while exporting (saving
	// it after each of a thousand trajectories rewrote it a thousand
	// times) and always before returning: an interrupted export loses at
	// most a second of its record, and those trajectories are exported
	// again next time.
	lastSave, dirty := time.Now(), false
	save := func(force bool) error {
		if !dirty || !force && time.Since(lastSave) < time.Second {
			return nil
		}
		lastSave, dirty = time.Now(), false
		return saveManifest(opts, m)
	}
	// Trajectories are exported opts.Workers at a time (a remote store's
	// downloads overlap; each worker holds one trajectory's row group).
	// mu guards sum, m and the save state.
	var (
		mu      sync.Mutex
		saveErr error
		done    int
	)
	one := func(t *ref.Trajectory) {
		fp, err := fingerprint(ctx, t)
		if err == nil {
			mu.Lock()
			prev := m.Trajectories[t.ID]
			mu.Unlock()
			if !opts.Full && prev != nil && prev.Fingerprint == fp && outputsExist(opts, t.ID) {
				mu.Lock()
				sum.Unchanged++
				done++
				mu.Unlock()
				log.Debug("unchanged", "trajectory", t.ID)
				return
			}
		}
		t0 := time.Now()
		var rows map[string]int64
		var warnings []string
		if err == nil {
			rows, warnings, err = exportOne(ctx, t, &opts)
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		if err != nil {
			log.Error("export failed", "trajectory", t.ID, "err", err)
			sum.Failed++
			return
		}
		for k, n := range rows {
			sum.Rows[k] += n
		}
		sum.Exported++
		m.Trajectories[t.ID] = &ManifestEntry{Source: t.Store.URI(t.TraceKey()), Fingerprint: fp,
			ExportedAt: opts.Now().UTC().Format(time.RFC3339), Rows: rows, Warnings: warnings}
		dirty = true
		if err := save(false); err != nil && saveErr == nil {
			saveErr = err
		}
		log.Info("exported", "trajectory", t.ID, "n", fmt.Sprintf("%d/%d", done, len(trajs)),
			"rows", rows, "duration", time.Since(t0).Round(time.Millisecond))
	}
	jobs := make(chan *ref.Trajectory)
	var wg sync.WaitGroup
	for range min(opts.Workers, len(trajs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range jobs {
				one(t)
			}
		}()
	}
feed:
	for _, t := range trajs {
		select {
		case jobs <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if saveErr != nil {
		return sum, saveErr
	}
	if err := ctx.Err(); err != nil {
		if serr := save(true); serr != nil {
			return sum, serr
		}
		return sum, err
	}
	if opts.Prune {
		named := make(map[string]bool, len(trajs))
		for _, t := range trajs {
			named[t.ID] = true
		}
		for id := range m.Trajectories {
			if named[id] {
				continue
			}
			if err := removeOutputs(opts, id); err != nil {
				return sum, err
			}
			delete(m.Trajectories, id)
			sum.Pruned++
			dirty = true
			log.Info("pruned", "trajectory", id)
		}
	}
	if err := save(true); err != nil {
		return sum, err
	}
	sum.Duration = time.Since(start)
	if sum.Failed > 0 {
		return sum, fmt.Errorf("%d of %d trajectories could not be exported (see the errors above)", sum.Failed, len(trajs))
	}
	return sum, nil
}

// protectedFolders are the local folders trajs are read from: each
// trajectory's folder and, for trajectories of a store, the store.
func protectedFolders(trajs []*ref.Trajectory) []string {
	var out []string
	for _, t := range trajs {
		lp, ok := store.AsLocal(t.Store)
		if !ok {
			continue
		}
		p, err := lp.LocalPath(t.TraceKey())
		if err != nil {
			continue
		}
		dir := filepath.Dir(p)
		out = append(out, dir)
		if t.Prefix != "" { // <store>/trajectories/<id>/
			out = append(out, filepath.Dir(filepath.Dir(dir)))
		}
	}
	return out
}

// missingFolders lists dir and its ancestors that do not exist yet,
// innermost first.
func missingFolders(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			return out
		}
		out = append(out, d)
	}
}

// removeEmpty removes the table folders and the folders Run created, as
// long as they hold nothing.
func removeEmpty(opts Options, created []string) {
	for _, t := range TableNames() {
		os.Remove(filepath.Join(opts.Out, t))
	}
	for _, d := range created {
		if os.Remove(d) != nil {
			return
		}
	}
}

func (o *Options) defaults() error {
	switch o.Format {
	case FormatParquet, FormatATIF:
	case "":
		return replay.UsageError("give --format parquet or --format atif")
	default:
		return replay.UsageError("unknown format %q: want parquet or atif", o.Format)
	}
	if o.Out == "" {
		return replay.UsageError("give --out DIR")
	}
	if o.ValueCap == 0 {
		o.ValueCap = DefaultValueCap
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.RowGroupBytes <= 0 {
		o.RowGroupBytes = DefaultRowGroupBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Format == FormatParquet && o.codec == nil {
		c, err := newZstdCodec()
		if err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		o.codec = c
	}
	return nil
}

// exportOne opens one trajectory and writes it in the chosen format.
func exportOne(ctx context.Context, t *ref.Trajectory, opts *Options) (map[string]int64, []string, error) {
	in := &input{id: t.ID, where: t.Where, logger: opts.Logger, store: t.Store, prefix: t.Prefix}
	path, rebuilt, err := t.TracePath(ctx)
	switch {
	case errors.Is(err, ref.ErrPartial):
		in.warn("%v", err)
	case err != nil:
		return nil, nil, err
	}
	in.tracePath, in.rebuilt = path, rebuilt
	if rebuilt {
		in.warn("no %s: the trace was rebuilt from its chunks", store.TraceName)
	}
	// The evaluation report and the git history feed Parquet's tables
	// only; ATIF has no place for them.
	if opts.Format == FormatParquet {
		if in.eval, err = loadEvaluation(ctx, t); err != nil {
			in.warn("evaluation report ignored: %v", err)
		}
		if in.sweeps, err = sweepvalue.LoadAll(ctx, t.Store, t.Prefix); err != nil {
			in.warn("fork sweeps ignored: %v", err)
		}
		if bundles, err := t.BundlePaths(ctx); err != nil {
			in.warn("no git history (lines added and removed stay empty): %v", err)
		} else if in.hist, err = githistory.Open(ctx, bundles...); err != nil {
			in.warn("git history unreadable (lines added and removed stay empty): %v", err)
		}
		if in.hist != nil {
			defer in.hist.Close()
		}
	}
	var rows map[string]int64
	switch opts.Format {
	case FormatParquet:
		rows, err = writeParquet(ctx, in, opts)
	case FormatATIF:
		rows, err = writeATIF(ctx, in, opts)
	}
	return rows, in.warnings, err
}

// outputPaths are the files one trajectory's export consists of.
func outputPaths(opts Options, id string) []string {
	if opts.Format == FormatATIF {
		return []string{filepath.Join(opts.Out, id, ATIFName)}
	}
	var out []string
	for _, t := range TableNames() {
		out = append(out, filepath.Join(opts.Out, t, id+".parquet"))
	}
	return out
}

func outputsExist(opts Options, id string) bool {
	for _, p := range outputPaths(opts, id) {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

func removeOutputs(opts Options, id string) error {
	for _, p := range outputPaths(opts, id) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("prune %s: %w", id, err)
		}
	}
	if opts.Format == FormatATIF {
		os.Remove(filepath.Join(opts.Out, id)) // its folder, once empty
	}
	return nil
}

func loadManifest(opts Options) (*Manifest, error) {
	fresh := &Manifest{Format: opts.Format, SchemaVersion: SchemaVersion, Trajectories: map[string]*ManifestEntry{}}
	if opts.Format == FormatParquet {
		fresh.ValueCap, fresh.Tables = opts.ValueCap, TableNames()
	}
	data, err := os.ReadFile(filepath.Join(opts.Out, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return fresh, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read export manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read export manifest %s: %w", filepath.Join(opts.Out, ManifestName), err)
	}
	if m.Format != opts.Format {
		return nil, replay.UsageError("%s holds a %s export; choose another --out for %s", opts.Out, m.Format, opts.Format)
	}
	// Another schema version or value cap: every file is rewritten.
	if m.SchemaVersion != SchemaVersion || m.ValueCap != fresh.ValueCap || m.Trajectories == nil {
		fresh.Trajectories = map[string]*ManifestEntry{}
		for id := range m.Trajectories {
			fresh.Trajectories[id] = &ManifestEntry{} // known, so --prune can remove it
		}
		return fresh, nil
	}
	return &m, nil
}

func saveManifest(opts Options, m *Manifest) error {
	data, err := replay.MarshalIndent(m)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(opts.Out, ManifestName), data)
}
