package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store"
)

// tableFile streams rows of one table into a temporary file beside its
// final name. Rows go out in batches; a row group is closed whenever the
// rows buffered since the last one reach rowGroupBytes, so memory is
// bounded by one row group (plus the writer's page buffers), never by the
// trace.
type tableFile[T any] struct {
	path          string
	f             *atomicfile.Pending
	w             *parquet.GenericWriter[T]
	batch         []T
	batchBytes    int64
	groupBytes    int64
	rowGroupBytes int64
	rows          int64
}

const batchRows = 64

func newTableFile[T any](dir, table, id string, meta map[string]string, opts *Options) (*tableFile[T], error) {
	path := filepath.Join(dir, table, id+".parquet")
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	wopts := []parquet.WriterOption{
		// One codec for every file of a Run: it holds the zstd encoders.
		parquet.Compression(opts.codec),
		parquet.CreatedBy("traj", meta["traj.version"], ""),
		parquet.KeyValueMetadata("traj.export.table", table),
	}
	for k, v := range meta {
		wopts = append(wopts, parquet.KeyValueMetadata(k, v))
	}
	return &tableFile[T]{path: path, f: f, w: parquet.NewGenericWriter[T](f.File(), wopts...), rowGroupBytes: opts.RowGroupBytes}, nil
}

// add queues a row of about size bytes.
func (t *tableFile[T]) add(row T, size int64) error {
	t.batch = append(t.batch, row)
	t.batchBytes += size
	if len(t.batch) >= batchRows {
		return t.drain()
	}
	return nil
}

func (t *tableFile[T]) drain() error {
	if len(t.batch) == 0 {
		return nil
	}
	if _, err := t.w.Write(t.batch); err != nil {
		return fmt.Errorf("write %s: %w", t.path, err)
	}
	t.rows += int64(len(t.batch))
	t.groupBytes += t.batchBytes
	clear(t.batch)
	t.batch, t.batchBytes = t.batch[:0], 0
	if t.groupBytes >= t.rowGroupBytes {
		if err := t.w.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", t.path, err)
		}
		t.groupBytes = 0
	}
	return nil
}

// reset drops rows of an earlier attempt (a store's Load may call its
// function again on retry). Only valid before anything was drained.
func (t *tableFile[T]) reset() {
	clear(t.batch)
	t.batch, t.batchBytes = t.batch[:0], 0
}

// finish writes the file's footer; commit puts it in place.
func (t *tableFile[T]) finish() error {
	if err := t.drain(); err != nil {
		return err
	}
	if err := t.w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", t.path, err)
	}
	return nil
}

func (t *tableFile[T]) commit() error { return t.f.Commit() }

func (t *tableFile[T]) abort() { t.f.Abort() }

// tableCloser is a tableFile of any row type.
type tableCloser interface {
	finish() error
	commit() error
	abort()
}

// eachFile runs fn on every file at once and returns the first error (in
// the files' order).
func eachFile(files []tableCloser, fn func(tableCloser) error) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(f)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parquetExport writes the tables of one trajectory (one file each).
type parquetExport struct {
	in   *input
	opts *Options

	traj  *tableFile[TrajectoryRow]
	parts *tableFile[PartRow]
	evals *tableFile[EvaluationRow]
	tests *tableFile[TestRow]
	calls *tableFile[ModelCallRow]
	marks *tableFile[LabelRow]
	swept *tableFile[SweepRow]
	// labeller gathers what the failure labels need as the parts go by.
	labeller *labels.Observer

	sessions sessionMap
	models   map[string]string // message id → provider/model
	pending  *PartRow          // the last part, held until its turn's trailing usage is known
	pendSize int64
	turns    int
	row      TrajectoryRow
	usage    trace.Usage
	trees    map[string]string // commit → tree
	// ground is the trace's ground truth, for the scores when no evaluate
	// report exists.
	ground []trace.GroundTruth
}

func writeParquet(ctx context.Context, in *input, opts *Options) (map[string]int64, error) {
	meta := map[string]string{
		"traj.export.schema_version":  SchemaVersion,
		"traj.export.value_cap_bytes": strconv.Itoa(opts.ValueCap),
		"traj.version":                opts.Version,
		"traj.trajectory_id":          in.id,
	}
	e := &parquetExport{in: in, opts: opts, sessions: newSessionMap(), models: map[string]string{}, trees: map[string]string{}}
	var err error
	var files []tableCloser
	defer func() {
		if err != nil {
			for _, f := range files {
				f.abort()
			}
		}
	}()
	if e.traj, err = newTableFile[TrajectoryRow](opts.Out, TableTrajectories, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.traj)
	if e.parts, err = newTableFile[PartRow](opts.Out, TableParts, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.parts)
	if e.evals, err = newTableFile[EvaluationRow](opts.Out, TableEvaluations, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.evals)
	if e.tests, err = newTableFile[TestRow](opts.Out, TableTests, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.tests)
	if e.calls, err = newTableFile[ModelCallRow](opts.Out, TableModelCalls, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.calls)
	if e.marks, err = newTableFile[LabelRow](opts.Out, TableLabels, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.marks)
	if e.swept, err = newTableFile[SweepRow](opts.Out, TableSweeps, in.id, meta, opts); err != nil {
		return nil, err
	}
	files = append(files, e.swept)

	if err = e.scan(ctx); err != nil {
		return nil, err
	}
	if err = e.evaluations(ctx); err != nil {
		return nil, err
	}
	if err = e.modelCalls(ctx); err != nil {
		return nil, err
	}
	if err = e.labels(); err != nil {
		return nil, err
	}
	if err = e.sweeps(); err != nil {
		return nil, err
	}
	e.finishRow()
	if err = e.traj.add(e.row, 0); err != nil {
		return nil, err
	}
	// The files are closed, then committed, all at once: each close
	// compresses its last pages, each commit waits on its fsyncs.
	if err = eachFile(files, func(f tableCloser) error { return f.finish() }); err != nil {
		return nil, err
	}
	if err = eachFile(files, func(f tableCloser) error { return f.commit() }); err != nil {
		return nil, fmt.Errorf("write the export of %s: %w", in.id, err)
	}
	return map[string]int64{
		TableTrajectories: e.traj.rows, TableParts: e.parts.rows,
		TableEvaluations: e.evals.rows, TableTests: e.tests.rows, TableModelCalls: e.calls.rows,
		TableLabels: e.marks.rows, TableSweeps: e.swept.rows,
	}, nil
}

// sweeps writes the value of the trajectory's state at each part its fork
// sweeps swept (one row per sweep and part).
func (e *parquetExport) sweeps() error {
	for _, s := range e.in.sweeps {
		for _, r := range s.Rows {
			row := SweepRow{TrajectoryID: e.in.id, Sweep: s.Name, Part: int64(r.Part), ForkPart: int64(r.ForkPart), Model: s.Model,
				Forks: int64(r.Forks), Counted: int64(r.Counted), NotReproduced: int64(r.NotReproduced), Solved: int64(r.Solved),
				Decisive: s.Decisive != nil && s.Decisive.Part == r.Part}
			if r.Counted > 0 {
				row.MeanValue, row.StdValue, row.MinValue, row.MaxValue = f64(r.Mean), f64(r.Std), f64(r.Min), f64(r.Max)
				row.ShareSolved = f64(r.ShareSolved)
			}
			if err := e.swept.add(row, 128); err != nil {
				return err
			}
		}
	}
	return nil
}

// labels writes the trajectory's failure labels: those its evaluation
// report holds (`traj replay evaluate`'s thresholds), else computed with
// the default thresholds from the trace and the report.
func (e *parquetExport) labels() error {
	source := "computed"
	set, ok := labels.Stored(e.in.eval)
	if ok {
		source = "evaluate"
	} else {
		set.Labels = e.labeller.Labels(e.in.eval, labels.Options{})
	}
	for _, l := range set.Labels {
		row := LabelRow{TrajectoryID: e.in.id, Label: l.Label, Evidence: l.Evidence, Source: source}
		if l.Part > 0 {
			row.Part = i64(int64(l.Part))
		}
		if err := e.marks.add(row, int64(len(l.Evidence))+64); err != nil {
			return err
		}
	}
	return nil
}

func (e *parquetExport) scan(ctx context.Context) error {
	e.labeller = labels.NewObserver("", labels.Options{})
	e.row = TrajectoryRow{TrajectoryID: e.in.id, Source: e.in.where, TraceRebuilt: e.in.rebuilt}
	// The parts table keeps copies (strings) of what it reads from a
	// part: the read may use a batch's memory again.
	err := readTrace(ctx, e.in.tracePath, 0, readOptions{reuse: true}, traceVisitor{
		OnHeader: func(h *trace.Header) error {
			e.header(h)
			e.labeller = labels.NewObserver(h.Agent, labels.Options{})
			return nil
		},
		OnPart: func(turn int, d *decodedPart) error {
			e.labeller.PartRead(&d.Part, d.view.Text)
			return e.part(ctx, turn, d)
		},
		OnTurn: func(i int, t *trace.Turn) error {
			e.labeller.Turn(t)
			e.turns = i + 1
			if e.pending != nil && int(e.pending.Turn) == i+1 && e.pending.ModelCallSeq == nil {
				for _, raw := range t.TrailingParts {
					if u, ok := modelCallUsage(raw, e.sessions.reader); ok {
						addUsage(e.pending, u.Tokens, u.Cost)
					}
				}
			}
			return e.flushPending()
		},
		OnEnd: func(t *trace.Trace) error {
			e.header(&trace.Header{SchemaVersion: t.SchemaVersion, TrajectoryID: t.TrajectoryID, SessionID: t.SessionID,
				Agent: t.Agent, AgentModel: t.AgentModel, StartedAt: t.StartedAt, Task: t.Task, Environment: t.Environment,
				RerunOf: t.RerunOf, ForkedFrom: t.ForkedFrom})
			e.usage.End(t.SessionEnd)
			e.labeller.End(t)
			if se := t.SessionEnd; se != nil {
				if err := e.groundTruth(se.GroundTruth); err != nil {
					return err
				}
				e.row.EndReason = str(se.Reason)
				e.row.EndedAt = timestamp(se.EndedAt)
				if se.FinalGitCommit != "" {
					e.row.FinalCommit = str(se.FinalGitCommit)
				}
			}
			return e.flushPending()
		},
	})
	if err != nil {
		return fmt.Errorf("read trace of %s: %w", e.in.id, err)
	}
	return nil
}

// header fills the trajectory row from the trace's top-level fields; it
// runs at the header and again at the end (a foreign trace may have them
// after its turns).
func (e *parquetExport) header(h *trace.Header) {
	r := &e.row
	if h.TrajectoryID != "" && r.TrajectoryID == "" {
		r.TrajectoryID = h.TrajectoryID
	}
	r.TraceSchemaVersion = str(h.SchemaVersion)
	if r.TraceSchemaVersion == nil {
		r.TraceSchemaVersion = str("0") // the original recorder's traces have none
	}
	e.sessions.setAgent(h.Agent)
	r.Harness, r.Model = e.sessions.name, h.AgentModel
	r.Task, r.SessionID = str(h.Task), str(h.SessionID)
	r.StartedAt = timestamp(h.StartedAt)
	if env := h.Environment; env != nil {
		r.Environment, r.EnvironmentVersion = str(env.Name), str(env.Version)
	}
	e.sessions.root = h.SessionID
	if l := h.RerunOf; l != nil {
		r.RerunOf = str(l.TrajectoryID)
	}
	if l := h.ForkedFrom; l != nil {
		r.ForkedFrom = str(l.TrajectoryID)
		if l.Part > 0 {
			n := int64(l.Part)
			r.ForkPart = &n
		}
	}
}

func (e *parquetExport) part(ctx context.Context, turn int, d *decodedPart) error {
	p := &d.Part
	for _, s := range d.sessions {
		e.sessions.addSession(s)
	}
	for _, m := range d.models {
		e.models[m.id] = m.model
	}
	if err := e.flushPending(); err != nil {
		return err
	}
	e.usage.AddPart(p)
	v := &d.view
	limit := e.opts.ValueCap
	row := PartRow{
		TrajectoryID: e.in.id, Part: int64(p.Part), Turn: int32(turn + 1), Timestamp: timestamp(p.Timestamp),
		SessionID: str(p.SessionID), Harness: e.row.Harness, MessageID: str(p.MessageID), PartID: str(p.PartID),
		PartType: str(v.Type), Tool: str(v.Tool), ToolCallID: str(v.CallID), ToolStatus: str(v.Status),
		ToolTitle: str(v.Title), SubagentSession: str(v.Subsession), ValueCapBytes: int64(limit),
		RunTestsCalls: int32(len(p.EnvoiCalls)), ChangedFiles: []string{},
	}
	var size int64 = 256
	if p.SessionID != "" && p.SessionID != e.sessions.root {
		row.Subagent = true
		row.ParentSessionID = str(e.sessions.parent(p.SessionID))
	}
	if m := e.models[p.MessageID]; m != "" {
		row.Model = str(m)
	}
	if len(v.Input) > 0 && string(v.Input) != "null" {
		row.ToolInput, row.ToolInputBytes = capped(string(agent.PlainJSON(v.Input)), limit)
		size += int64(len(*row.ToolInput))
	}
	if a := v.Action; a != nil && v.Type == "tool" {
		row.ToolKind = str(a.ToolKind())
		switch a.Kind {
		case agent.ActionCommand:
			row.Command, _ = capped(a.Command, limit)
			if a.ExitCode != nil {
				n := int32(*a.ExitCode)
				row.ExitCode = &n
			}
		case agent.ActionEdit, agent.ActionWrite, agent.ActionRead:
			row.FilePath = str(a.Path)
		}
		if row.Command != nil {
			size += int64(len(*row.Command))
		}
	}
	if v.Type == "tool" {
		row.ToolOutput, row.ToolOutputBytes = capped(v.Output, limit)
		size += int64(len(*row.ToolOutput))
		if v.Error != "" {
			row.ToolError, _ = capped(v.Error, limit)
			size += int64(len(*row.ToolError))
		}
		if !v.Start.IsZero() && !v.End.IsZero() {
			row.ToolDurationMs = i64(v.End.Sub(v.Start).Milliseconds())
		}
		e.row.ToolParts++
	}
	if v.Text != "" {
		row.Text, row.TextBytes = capped(v.Text, limit)
		size += int64(len(*row.Text))
	}
	if p.Tokens != nil {
		addUsage(&row, *p.Tokens, 0)
	}
	if p.Cost != nil {
		row.CostUSD = f64(*p.Cost)
	}
	if c := p.ModelCall; c != nil {
		row.ModelCallSeq, row.ModelCallMs = i64(int64(c.Seq)), f64(c.LatencyMS)
		if c.Model != "" && row.Model == nil {
			row.Model = str(c.Model)
		}
	}
	if t := p.HarnessTokens; t != nil {
		row.HarnessTokensTotal = i64(t.Total())
	}
	if c := p.HarnessCost; c != nil {
		row.HarnessCostUSD = f64(*c)
	}
	commit := effectiveCommit(p)
	row.Commit = str(commit)
	if cp := p.RepoCheckpoint; cp != nil {
		row.CommitBefore = str(cp.CommitBefore)
		row.Committed = cp.Committed
		row.FilesChanged = int32(len(cp.ChangedFiles))
		row.ChangedFiles = append(row.ChangedFiles, cp.ChangedFiles...)
		for _, f := range cp.ChangedFiles {
			size += int64(len(f))
		}
		if e.in.hist != nil {
			if !cp.Committed {
				row.LinesAdded, row.LinesRemoved = i64(0), i64(0)
			} else if st, err := e.in.hist.Diff(ctx, cp.CommitBefore, cp.CommitAfter); err == nil {
				row.LinesAdded, row.LinesRemoved = i64(int64(st.Added)), i64(int64(st.Removed))
				if st.TooLarge {
					e.in.warn("part %d: a file too large to diff: lines_added and lines_removed count a correct but not minimal diff", p.Part)
				}
			} else {
				e.in.warn("part %d: no line counts: %v", p.Part, err)
			}
		}
		if cp.Committed {
			e.row.Checkpoints++
		}
	}
	e.row.Parts++
	e.row.RunTestsCalls += int64(len(p.EnvoiCalls))
	for _, c := range p.EnvoiCalls {
		if err := e.runTests(ctx, p, commit, c); err != nil {
			return err
		}
	}
	if err := e.groundTruth(p.GroundTruth); err != nil {
		return err
	}
	e.pending, e.pendSize = &row, size
	return nil
}

// groundTruth writes the evaluation rows of traj's own evaluations during
// the run (source "ground_truth"): one per required test path, or one for
// a tree that could not be evaluated. A freshly recorded trajectory has
// scores before any traj replay evaluate.
func (e *parquetExport) groundTruth(gts []trace.GroundTruth) error {
	e.ground = append(e.ground, gts...)
	for _, gt := range gts {
		base := EvaluationRow{TrajectoryID: e.in.id, Source: "ground_truth", Commit: str(gt.Commit), Tree: str(gt.Tree),
			Part: i64(int64(gt.Part)), ResultSource: str("evaluated"), DurationMs: i64(gt.DurationMs), Timestamp: timestamp(gt.Timestamp)}
		if gt.Cached {
			base.ResultSource = str("cache")
		}
		if gt.Error != "" || len(gt.Suites) == 0 {
			r := base
			r.Passed, r.Failed, r.Total = i64(gt.Passed), i64(gt.Failed), i64(gt.Total)
			r.Error = str(gt.Error)
			if err := e.evals.add(r, 256); err != nil {
				return err
			}
			continue
		}
		counts := make(map[string][2]int64, len(gt.Suites))
		for _, sc := range gt.Suites {
			counts[sc.Path] = [2]int64{sc.Passed, sc.Total}
		}
		if gap, ok := replay.FreshGap(counts); ok {
			base.FreshGap = f64(gap)
		}
		for _, sc := range gt.Suites {
			r := base
			r.Suite = str(sc.Path)
			r.Passed, r.Failed, r.Total = i64(sc.Passed), i64(sc.Failed), i64(sc.Total)
			if sc.Total > 0 {
				r.PassRate = f64(float64(sc.Passed) / float64(sc.Total))
			}
			if !sc.BuildOK {
				r.Error = str("build failed")
			}
			if err := e.evals.add(r, 256); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *parquetExport) flushPending() error {
	if e.pending == nil {
		return nil
	}
	row, size := *e.pending, e.pendSize
	e.pending = nil
	return e.parts.add(row, size)
}

// runTests writes the evaluation row of a run_tests call the agent made.
func (e *parquetExport) runTests(ctx context.Context, p *trace.Part, commit string, c trace.EnvoiCall) error {
	r := EvaluationRow{TrajectoryID: e.in.id, Source: "run_tests", Commit: str(commit), Part: i64(int64(p.Part)),
		Suite: str(c.Path), ResultSource: str(strconv.Itoa(c.StatusCode)), DurationMs: i64(c.DurationMs), Timestamp: timestamp(c.Timestamp)}
	if tree := e.tree(ctx, commit); tree != "" {
		r.Tree = str(tree)
	}
	if passed, failed, total, ok := c.Counts(); ok {
		r.Passed, r.Failed, r.Total = i64(int64(passed)), i64(int64(failed)), i64(int64(total))
		if total > 0 {
			r.PassRate = f64(float64(passed) / float64(total))
		}
	}
	if c.Error != nil && *c.Error != "" {
		r.Error, _ = capped(*c.Error, e.opts.ValueCap)
	}
	return e.evals.add(r, 256)
}

func (e *parquetExport) tree(ctx context.Context, commit string) string {
	if e.in.hist == nil || commit == "" {
		return ""
	}
	if t, ok := e.trees[commit]; ok {
		return t
	}
	t, err := e.in.hist.Tree(ctx, commit)
	if err != nil {
		t = ""
	}
	e.trees[commit] = t
	return t
}

// evaluations writes the evaluate report's rows: one per commit and suite,
// and one per test.
func (e *parquetExport) evaluations(ctx context.Context) error {
	ev := e.in.eval
	if ev == nil {
		return e.groundTruthScores(ctx)
	}
	e.row.Evaluated = true
	commits := make([]string, 0, len(ev.CommitEvaluations))
	for c := range ev.CommitEvaluations {
		commits = append(commits, c)
	}
	// Commits in the order the trajectory reached them.
	first := func(c string) int {
		if ce := ev.CommitEvaluations[c]; ce != nil && len(ce.Parts) > 0 {
			return slices.Min(ce.Parts)
		}
		return int(^uint(0) >> 1)
	}
	slices.SortFunc(commits, func(a, b string) int {
		if d := first(a) - first(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, c := range commits {
		ce := ev.CommitEvaluations[c]
		if ce == nil {
			continue
		}
		base := EvaluationRow{TrajectoryID: e.in.id, Source: "evaluate", Commit: str(c), Tree: str(ce.Tree),
			ResultSource: str(ce.Source), DurationMs: i64(ce.DurationMs)}
		if len(ce.Parts) > 0 {
			base.Part = i64(int64(slices.Min(ce.Parts)))
		}
		if len(ce.Suites) == 0 {
			r := base
			r.Passed, r.Failed, r.Total = i64(int64(ce.Passed)), i64(int64(ce.Failed)), i64(int64(ce.Total))
			r.PassRate = f64(ce.PassRate)
			r.Error = str(ce.Error)
			if err := e.evals.add(r, 256); err != nil {
				return err
			}
			continue
		}
		suites := make([]string, 0, len(ce.Suites))
		for s := range ce.Suites {
			suites = append(suites, s)
		}
		slices.Sort(suites)
		counts := make(map[string][2]int64, len(ce.Suites))
		for s, sr := range ce.Suites {
			counts[s] = [2]int64{int64(sr.Passed), int64(sr.Total)}
		}
		if gap, ok := replay.FreshGap(counts); ok {
			base.FreshGap = f64(gap)
		}
		for _, s := range suites {
			sr := ce.Suites[s]
			r := base
			r.Suite = str(s)
			r.Passed, r.Failed, r.Total = i64(int64(sr.Passed)), i64(int64(sr.Failed)), i64(int64(sr.Total))
			if sr.Total > 0 {
				r.PassRate = f64(float64(sr.Passed) / float64(sr.Total))
			}
			r.Error = str(firstNonEmpty(sr.Error, ce.Error))
			if err := e.evals.add(r, 256); err != nil {
				return err
			}
		}
	}
	// The trajectory's final and best results, by part.
	if keys := ev.PartEvaluations.Keys(); len(keys) > 0 {
		last := ev.PartEvaluations[keys[len(keys)-1]]
		if last != nil && last.Error == "" {
			e.row.FinalPassed, e.row.FinalFailed, e.row.FinalTotal = i64(int64(last.Passed)), i64(int64(last.Failed)), i64(int64(last.Total))
			e.row.FinalPassRate = f64(last.PassRate)
			counts := make(map[string][2]int64, len(last.Suites))
			for s, su := range last.Suites {
				counts[s] = [2]int64{int64(su.Passed), int64(su.Total)}
			}
			if gap, ok := replay.FreshGap(counts); ok {
				e.row.FinalFreshGap = f64(gap)
			}
		}
		for _, k := range keys {
			pe := ev.PartEvaluations[k]
			if pe == nil || pe.Error != "" {
				continue
			}
			if e.row.BestPassRate == nil || pe.PassRate > *e.row.BestPassRate {
				e.row.BestPassRate, e.row.BestPart = f64(pe.PassRate), i64(int64(k))
			}
		}
		e.row.ScoreSource = str(sourceEvaluate)
	}
	tests := make([]string, 0, len(ev.TestAttribution))
	for t := range ev.TestAttribution {
		tests = append(tests, t)
	}
	slices.Sort(tests)
	for _, t := range tests {
		a := ev.TestAttribution[t]
		if a == nil {
			continue
		}
		if err := e.testRow(t, a, sourceEvaluate); err != nil {
			return err
		}
	}
	return nil
}

// Where a trajectory's scores and tests come from (score_source, the
// tests table's source).
const (
	sourceEvaluate    = "evaluate"
	sourceGroundTruth = "ground_truth"
)

func (e *parquetExport) testRow(t string, a *replay.Attribution, source string) error {
	r := TestRow{TrajectoryID: e.in.id, Test: t, Suite: testSuite(t), Source: source, BrokenAt: ints(a.BrokenAt), FixedAt: ints(a.FixedAt),
		TimesBroken: int32(len(a.BrokenAt)), PassingAtEnd: a.PassingAtEnd}
	if a.FirstPassPart != nil {
		r.FirstPassPart = i64(int64(*a.FirstPassPart))
	}
	return e.tests.add(r, int64(len(t))+64)
}

// groundTruthScores are a trajectory's scores without an evaluate report:
// its final and best results from the trace's full ground truth, and the
// tests table from the per-case results the run cached (the store's
// evaluation cache, by each result's cache key). A trajectory whose
// cached results are gone has scores and no tests rows (a warning says
// so).
func (e *parquetExport) groundTruthScores(ctx context.Context) error {
	full := replay.FullGroundTruth(e.ground)
	if len(full) == 0 {
		return nil
	}
	e.row.ScoreSource = str(sourceGroundTruth)
	rate := func(g trace.GroundTruth) float64 { return float64(g.Passed) / float64(g.Total) }
	last := full[len(full)-1]
	e.row.FinalPassed, e.row.FinalFailed, e.row.FinalTotal = i64(last.Passed), i64(last.Failed), i64(last.Total)
	e.row.FinalPassRate = f64(rate(last))
	counts := make(map[string][2]int64, len(last.Suites))
	for _, sc := range last.Suites {
		counts[sc.Path] = [2]int64{sc.Passed, sc.Total}
	}
	if gap, ok := replay.FreshGap(counts); ok {
		e.row.FinalFreshGap = f64(gap)
	}
	for _, g := range full {
		if e.row.BestPassRate == nil || rate(g) > *e.row.BestPassRate {
			e.row.BestPassRate, e.row.BestPart = f64(rate(g)), i64(int64(g.Part))
		}
	}
	if e.in.store == nil {
		return nil
	}
	attr, ok, err := replay.GroundTruthAttribution(ctx, source.Cache(e.in.store), full)
	if err != nil || !ok {
		e.in.warn("tests table: the run's cached ground-truth results are not all in the store's evaluation cache (%v); traj replay evaluate fills it", err)
		return nil
	}
	for _, t := range slices.Sorted(maps.Keys(attr)) {
		if err := e.testRow(t, attr[t], sourceGroundTruth); err != nil {
			return err
		}
	}
	return nil
}

// modelCalls writes the model gateway's record of the trajectory, when it
// has one, a line at a time.
func (e *parquetExport) modelCalls(ctx context.Context) error {
	err := store.LoadRecord(ctx, e.in.store, e.in.prefix, store.ModelCallsName, func(r io.Reader) error {
		e.calls.reset()
		_, err := calls.ScanRecord(r, func(c calls.Call) error {
			row := ModelCallRow{TrajectoryID: e.in.id, Seq: int64(c.Seq), StartedAt: timestamp(c.StartedAt),
				LatencyMs: c.LatencyMS, FirstByteMs: c.FirstByteMS, API: c.API, Path: c.Path, Status: int32(c.Status),
				Model: str(c.Model), Stream: c.Stream, RequestSHA256: c.Request.SHA256, RequestBytes: int64(c.Request.Bytes),
				ResponseID: str(c.ResponseID), ToolCallIDs: append([]string{}, c.ToolCallIDs...), CostUSD: c.Cost,
				Error: str(c.Error), ResponseTruncated: c.ResponseTruncated}
			if t := c.Tokens; t != nil {
				row.TokensInput, row.TokensOutput, row.TokensReasoning = i64(t.Input), i64(t.Output), i64(t.Reasoning)
				row.TokensCacheRead, row.TokensCacheWrite = i64(t.CacheRead), i64(t.CacheWrite)
			}
			if c.PartsBefore != nil {
				row.PartsBefore = i64(int64(*c.PartsBefore))
			}
			row.Response, _ = capped(c.Response, e.opts.ValueCap)
			row.ResponseBytes = int64(len(c.Response))
			return e.calls.add(row, int64(len(*row.Response))+256)
		})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the model-call record of %s: %w", e.in.id, err)
	}
	return nil
}

// finishRow sets the trajectory row's totals: tokens and cost by
// trace.Usage, the one rule for a trajectory's totals.
func (e *parquetExport) finishRow() {
	r := &e.row
	r.Turns = int32(e.turns)
	r.SubagentSessions = int32(e.sessions.subagents())
	r.HarnessVersion = str(e.sessions.version)
	if t := e.usage.Tokens(); t != nil {
		r.TokensInput, r.TokensOutput, r.TokensReasoning = i64(t.Input), i64(t.Output), i64(t.Reasoning)
		r.TokensCacheRead, r.TokensCacheWrite = i64(t.CacheRead), i64(t.CacheWrite)
	}
	if c := e.usage.Cost(); c != nil {
		r.CostUSD = f64(*c)
	}
	src := "harness"
	if e.usage.FromGateway() {
		src = "model_gateway"
	}
	if r.TokensInput != nil || r.CostUSD != nil {
		r.TokensSource = str(src)
	}
	if t := e.usage.HarnessTokens(); t != nil {
		r.HarnessTokensInput, r.HarnessTokensOutput, r.HarnessTokensTotal = i64(t.Input), i64(t.Output), i64(t.Total())
	}
	if c := e.usage.HarnessCost(); c != nil {
		r.HarnessCostUSD = f64(*c)
	}
	if u := e.usage.Unattributed(); u != nil {
		r.UnattributedTokens, r.UnattributedCostUSD = i64(u.Tokens.Total()), f64(u.Cost)
		r.UnattributedCallCount = i64(int64(len(u.Calls)))
	}
	if n := e.usage.ModelCalls(); n > 0 {
		r.ModelCalls = i64(int64(n))
	}
}

// testSuite is the top-level suite of a test id ("basics/smoke/x.c" →
// "basics").
func testSuite(id string) string {
	s, _, _ := strings.Cut(id, "/")
	return s
}

// addUsage adds tokens and cost to a part row.
func addUsage(r *PartRow, t trace.Tokens, cost float64) {
	add := func(p **int64, n int64) {
		if *p == nil {
			*p = i64(0)
		}
		**p += n
	}
	add(&r.TokensInput, t.Input)
	add(&r.TokensOutput, t.Output)
	add(&r.TokensReasoning, t.Reasoning)
	add(&r.TokensCacheRead, t.CacheRead)
	add(&r.TokensCacheWrite, t.CacheWrite)
	if cost != 0 {
		if r.CostUSD == nil {
			r.CostUSD = f64(0)
		}
		*r.CostUSD += cost
	}
}

// effectiveCommit is the commit the workspace was at after p: git_commit,
// or the checkpoint's commit_after when a trace leaves it empty.
func effectiveCommit(p *trace.Part) string {
	if p.GitCommit == "" && p.RepoCheckpoint != nil {
		return p.RepoCheckpoint.CommitAfter
	}
	return p.GitCommit
}

// capped returns s cut to at most max bytes (at a UTF-8 boundary) and
// its full length, so a reader can tell a cut value from a whole one.
func capped(s string, max int) (*string, *int64) {
	n := int64(len(s))
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return &s, &n
}

func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func i64(n int64) *int64     { return &n }
func f64(f float64) *float64 { return &f }

func ints(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// timestamp parses a trace time; nil when absent or malformed.
func timestamp(s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}
