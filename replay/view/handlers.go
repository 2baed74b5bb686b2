package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// Summary is one trajectory's row on the store page.
type Summary struct {
	ID        string        `json:"id"`
	Agent     string        `json:"agent"`
	Model     string        `json:"model"`
	Task      string        `json:"task,omitempty"`
	Parts     int           `json:"parts"`
	Turns     int           `json:"turns"`
	EndReason string        `json:"end_reason"`
	Running   bool          `json:"running"`
	StartedAt string        `json:"started_at,omitempty"`
	Duration  *float64      `json:"duration_s"`
	Tokens    *trace.Tokens `json:"tokens,omitempty"`
	Cost      *float64      `json:"cost"`
	// HarnessTokens, HarnessCost and Unattributed sit beside the totals
	// when they are the model gateway's (session_end.model_calls).
	HarnessTokens *trace.Tokens       `json:"harness_tokens,omitempty"`
	HarnessCost   *float64            `json:"harness_cost,omitempty"`
	Unattributed  *trace.Unattributed `json:"unattributed,omitempty"`
	Score         *float64            `json:"score"`
	Source        string              `json:"score_source,omitempty"`
	Best          *float64            `json:"best"`
	BestPart      int                 `json:"best_part,omitempty"`
	SolvedAt      int                 `json:"solved_at,omitempty"`
	Suites        []report.SuiteRate  `json:"suites"`
	// Experiment is the experiment that ran the trajectory, if any.
	Experiment string `json:"experiment,omitempty"`
	// Lineage is where the trajectory came from (a fork or a rerun).
	Lineage *Lineage `json:"lineage,omitempty"`
	// Milestones are the first parts reaching each milestone rate, and
	// Hours the hours from the first part to them.
	Milestones map[string]int     `json:"milestones,omitempty"`
	Hours      map[string]float64 `json:"milestone_hours,omitempty"`
	// Dollars are the parts' cost up to each milestone.
	Dollars map[string]float64 `json:"milestone_dollars,omitempty"`
	// Spark is the score curve in at most sparkPoints [part, rate] points.
	Spark   [][2]float64 `json:"spark,omitempty"`
	Warning string       `json:"warning,omitempty"`
	Error   string       `json:"error,omitempty"`
	// Pending: still being indexed; the store page asks again.
	Pending bool `json:"pending,omitempty"`
	// Version changes whenever the trajectory does (live pages poll it).
	Version string `json:"version"`

	// SuspectPart is the first part whose result had fixed-like cases
	// (report.Series.Suspect); FixedLike their count at the latest.
	SuspectPart int `json:"suspect_part,omitempty"`
	FixedLike   int `json:"fixed_like,omitempty"`
	// FreshGap is the latest public − fresh gap (replay.FreshGap: public
	// pass rate minus the fresh suite's) and FreshGapPart its part;
	// absent without a result that has both.
	FreshGap     *float64 `json:"fresh_gap,omitempty"`
	FreshGapPart int      `json:"fresh_gap_part,omitempty"`
}

func (s *snapshot) summary(id string) Summary {
	ix := s.ix
	h := ix.Header
	sum := Summary{ID: id, Agent: h.Agent, Model: h.AgentModel, Task: h.Task, Parts: len(ix.Parts), Turns: len(ix.Turns),
		StartedAt: h.StartedAt, Suites: []report.SuiteRate{}, Warning: s.warning}
	if h.TrajectoryID != "" {
		sum.ID = h.TrajectoryID
	}
	if sum.Lineage = lineageOf(h); sum.Lineage != nil && sum.Lineage.Kind == "rerun" {
		sum.Lineage.Rerun = s.rerun
	}
	end := ""
	if e := ix.End; e != nil {
		sum.EndReason, end = e.Reason, e.EndedAt
		if e.TotalTurns > 0 {
			sum.Turns = e.TotalTurns
		}
	} else {
		sum.EndReason, sum.Running = "running", true
	}
	if end == "" && len(ix.Parts) > 0 {
		if t := ix.Parts[len(ix.Parts)-1].Time; t > 0 {
			end = time.UnixMilli(t).UTC().Format(time.RFC3339Nano)
		}
	}
	if st, err1 := time.Parse(time.RFC3339Nano, h.StartedAt); err1 == nil {
		if en, err2 := time.Parse(time.RFC3339Nano, end); err2 == nil && !en.Before(st) {
			d := en.Sub(st).Seconds()
			sum.Duration = &d
		}
	}
	sum.Tokens, sum.Cost = ix.Usage()
	if e := ix.End; e != nil && e.ModelCalls > 0 {
		sum.HarnessTokens, sum.HarnessCost, sum.Unattributed = e.HarnessTokens, e.HarnessCost, e.Unattributed
	}
	c := s.curve()
	sum.Score, sum.Source, sum.Suites = c.Rate, c.Source, c.Latest
	sum.Best, sum.BestPart, sum.SolvedAt = c.Best, c.BestPart, c.SolvedAt
	sum.SuspectPart, sum.FixedLike = c.SuspectPart, c.FixedLike
	if c.gap != nil {
		g := c.gap.Rate
		sum.FreshGap, sum.FreshGapPart = &g, c.gap.Part
	}
	if len(c.Milestones) > 0 {
		sum.Milestones, sum.Hours, sum.Dollars = c.Milestones, map[string]float64{}, map[string]float64{}
		for k, part := range c.Milestones {
			i, ok := ix.Find(part)
			if !ok {
				continue
			}
			if ix.Parts[0].Time > 0 && ix.Parts[i].Time > 0 {
				sum.Hours[k] = float64(ix.Parts[i].Time-ix.Parts[0].Time) / 3.6e6
			}
			if ix.PartCost != nil {
				sum.Dollars[k] = ix.Parts[i].Cost
			}
		}
	}
	sum.Spark = spark(c.Points)
	evalParts := 0
	if s.eval != nil {
		evalParts = len(s.eval.series.Points)
	}
	sum.Version = strconv.FormatInt(ix.Size, 10) + "-" + strconv.Itoa(len(ix.Parts)) + "-" + strconv.Itoa(evalParts)
	return sum
}

// sparkPoints bounds a store row's sparkline.
const sparkPoints = 40

// spark thins a curve to at most sparkPoints [part, rate] points, keeping
// the last.
func spark(pts [][3]float64) [][2]float64 {
	if len(pts) == 0 {
		return nil
	}
	out := make([][2]float64, 0, sparkPoints)
	for i := 0; i < sparkPoints-1; i++ {
		j := i * len(pts) / (sparkPoints - 1)
		if j >= len(pts) || (len(out) > 0 && out[len(out)-1][0] == pts[j][0]) {
			continue
		}
		out = append(out, [2]float64{pts[j][0], pts[j][2]})
	}
	last := pts[len(pts)-1]
	if out[len(out)-1][0] != last[0] {
		out = append(out, [2]float64{last[0], last[2]})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	// The browser never parses these as HTML, and the page inserts text
	// with textContent; escaping <, > and & as well costs nothing.
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// httpError maps an error to a status: unknown ids and paths are 404,
// malformed input 400, the rest 500.
func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errNoSuchPath), errors.Is(err, os.ErrNotExist):
		code = http.StatusNotFound
	case errors.Is(err, store.ErrInvalidKey), errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

var errBadRequest = errors.New("bad request")

func (s *Server) snapshot(ctx context.Context, id string) (*trajectory, *snapshot, error) {
	t, err := s.cat.get(id)
	if err != nil {
		return nil, nil, err
	}
	snap, err := t.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	return t, snap, nil
}

// summaryWorkers bounds how many trajectories are indexed at once for the
// store page; Options.SummaryWait bounds how long the page waits for them.
// A trajectory not ready by then is listed as pending, goes on being
// indexed in the background, and the page asks again.
const summaryWorkers = 2

func (s *Server) apiTrajectories(w http.ResponseWriter, r *http.Request) {
	ids, err := s.cat.ids(r.Context())
	if err != nil {
		httpError(w, err)
		return
	}
	exps, err := s.experiments.get(r.Context(), s.cat.st)
	if err != nil {
		s.logger.Debug("list experiments", "err", err)
	}
	listed := make(map[string]bool, len(ids))
	for _, id := range ids {
		listed[id] = true
	}
	type result struct {
		i   int
		sum Summary
	}
	results := make(chan result, len(ids))
	for i, id := range ids {
		go func() {
			s.indexing <- struct{}{}
			defer func() { <-s.indexing }()
			// The server's context, not the request's: an index
			// interrupted because the page stopped waiting would have
			// to start over at the next poll.
			_, snap, err := s.snapshot(s.ctx, id)
			if err != nil {
				results <- result{i, Summary{ID: id, EndReason: "unreadable", Error: err.Error(), Suites: []report.SuiteRate{}}}
				return
			}
			sum := snap.summary(id)
			sum.Experiment = experimentFor(exps, id)
			if l := sum.Lineage; l != nil {
				l.InStore = s.here(l) && listed[l.Source]
			}
			results <- result{i, sum}
		}()
	}
	out := make([]Summary, len(ids))
	got := make([]bool, len(ids))
	timer := time.NewTimer(s.summaryWait)
	defer timer.Stop()
	pending := len(ids)
wait:
	for pending > 0 {
		select {
		case res := <-results:
			out[res.i], got[res.i] = res.sum, true
			pending--
		case <-timer.C:
			break wait
		case <-r.Context().Done():
			return
		}
	}
	for i, id := range ids {
		if !got[i] {
			out[i] = Summary{ID: id, EndReason: "indexing", Pending: true, Suites: []report.SuiteRate{}}
		}
	}
	writeJSON(w, map[string]any{"store": s.storeName(), "trajectories": out, "pending": pending})
}

// Meta is the trajectory page's header: the summary, turns and sessions.
type Meta struct {
	Summary
	Header   trace.Header      `json:"header"`
	TurnList []TurnInfo        `json:"turn_list"`
	Sessions []Session         `json:"sessions"`
	End      *trace.SessionEnd `json:"session_end"`
	// FirstTime and LastTime bound the parts' timestamps (Unix ms).
	FirstTime int64 `json:"first_time"`
	LastTime  int64 `json:"last_time"`
	HasEval   bool  `json:"has_evaluation"`
	// Tools are the tool names the parts used, for the tool filter;
	// ToolKinds the harness-neutral kinds a tool filter can ask for.
	Tools     []string `json:"tools"`
	ToolKinds []string `json:"tool_kinds"`
}

// maxMetaTurns bounds the turns listed in the header; the timeline
// carries each part's turn anyway.
const maxMetaTurns = 2000

func (s *Server) apiMeta(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_, snap, err := s.snapshot(r.Context(), id)
	if err != nil {
		httpError(w, err)
		return
	}
	ix := snap.ix
	m := Meta{Summary: snap.summary(id), Header: ix.Header, TurnList: ix.Turns, Sessions: ix.Sessions, End: ix.End, HasEval: snap.eval != nil}
	if l := m.Lineage; l != nil {
		l.InStore = s.sourceInStore(r.Context(), l)
	}
	if len(m.TurnList) > maxMetaTurns {
		m.TurnList = m.TurnList[len(m.TurnList)-maxMetaTurns:]
	}
	if m.TurnList == nil {
		m.TurnList = []TurnInfo{}
	}
	if m.Sessions == nil {
		m.Sessions = []Session{}
	}
	m.Tools, m.ToolKinds = slices.Sorted(maps.Keys(ix.Tools)), agent.ToolKinds()
	if m.Tools == nil {
		m.Tools = []string{}
	}
	if n := len(ix.Parts); n > 0 {
		m.FirstTime, m.LastTime = ix.Parts[0].Time, ix.Parts[n-1].Time
	}
	writeJSON(w, m)
}

func (s *Server) apiCurve(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, snap.curve())
}

// maxPage bounds one page of timeline rows.
const maxPage = 500

func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errors.Join(errBadRequest, errors.New(name+": not a number"))
	}
	return n, nil
}

// apiParts serves a page of timeline rows: parts from..from+n-1 (part
// numbers, 1-based), read by offset from the trace.
func (s *Server) apiParts(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	from, err := intParam(r, "from", 1)
	if err != nil {
		httpError(w, err)
		return
	}
	n, err := intParam(r, "n", 100)
	if err != nil {
		httpError(w, err)
		return
	}
	n = min(max(n, 1), maxPage)
	ix := snap.ix
	f, err := os.Open(snap.path)
	if err != nil {
		httpError(w, err)
		return
	}
	defer f.Close()
	start := max(from-1, 0)
	if i, ok := ix.Find(from); ok {
		start = i
	}
	rows := []Row{}
	for i := start; i < len(ix.Parts) && len(rows) < n; i++ {
		raw, err := ix.ReadPart(f, i)
		if err != nil {
			httpError(w, err)
			return
		}
		rows = append(rows, row(ix, i, raw))
	}
	writeJSON(w, map[string]any{"total": len(ix.Parts), "rows": rows})
}

func (s *Server) partAt(w http.ResponseWriter, r *http.Request) (*trajectory, *snapshot, int, []byte, bool) {
	t, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return nil, nil, 0, nil, false
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		httpError(w, errors.Join(errBadRequest, errors.New("part: not a number")))
		return nil, nil, 0, nil, false
	}
	i, ok := snap.ix.Find(n)
	if !ok {
		httpError(w, errors.Join(errNoSuchPath, errors.New("no part "+strconv.Itoa(n))))
		return nil, nil, 0, nil, false
	}
	f, err := os.Open(snap.path)
	if err != nil {
		httpError(w, err)
		return nil, nil, 0, nil, false
	}
	defer f.Close()
	raw, err := snap.ix.ReadPart(f, i)
	if err != nil {
		httpError(w, err)
		return nil, nil, 0, nil, false
	}
	return t, snap, i, raw, true
}

func (s *Server) apiPart(w http.ResponseWriter, r *http.Request) {
	_, snap, i, raw, ok := s.partAt(w, r)
	if !ok {
		return
	}
	d, err := detail(snap.ix, i, raw)
	if err != nil {
		httpError(w, err)
		return
	}
	if d.Depth > 0 {
		d.SpawnedBy = spawnedBy(snap, d.Session)
	}
	if snap.calls != nil {
		seq := 0
		if d.ModelCall != nil {
			seq = d.ModelCall.Seq
		}
		if rows := snap.calls.forPart(d.Part, d.MessageID, d.CallID, seq); rows != nil {
			d.GatewayCalls = rows
		}
	}
	writeJSON(w, d)
}

func (s *Server) apiDiff(w http.ResponseWriter, r *http.Request) {
	t, _, _, raw, ok := s.partAt(w, r)
	if !ok {
		return
	}
	var p trace.Part
	if err := json.Unmarshal(raw, &p); err != nil {
		httpError(w, err)
		return
	}
	cp := p.RepoCheckpoint
	if cp == nil || !cp.Committed || cp.CommitBefore == "" || cp.CommitAfter == "" {
		writeJSON(w, map[string]any{"none": "this part changed no files", "files": []DiffFile{}})
		return
	}
	repo, err := t.repo(r.Context(), cp.CommitAfter)
	if err != nil {
		httpError(w, err)
		return
	}
	d, err := repo.diff(r.Context(), cp.CommitBefore, cp.CommitAfter)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, d)
}

func (s *Server) commitOf(w http.ResponseWriter, r *http.Request) (*gitRepo, string, bool) {
	t, _, _, raw, ok := s.partAt(w, r)
	if !ok {
		return nil, "", false
	}
	var p struct {
		GitCommit string `json:"git_commit"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.GitCommit == "" {
		httpError(w, errors.Join(errNoSuchPath, errors.New("this part records no git commit")))
		return nil, "", false
	}
	repo, err := t.repo(r.Context(), p.GitCommit)
	if err != nil {
		httpError(w, err)
		return nil, "", false
	}
	return repo, p.GitCommit, true
}

func (s *Server) apiTree(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := s.commitOf(w, r)
	if !ok {
		return
	}
	dir := cleanPath(r.URL.Query().Get("path"))
	entries, err := repo.tree(commit, dir)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"commit": commit, "path": dir, "entries": entries})
}

// apiFile serves a file at a part's commit with the lines that part added
// (when its checkpoint changed the file) and the parts whose checkpoints
// changed it.
func (s *Server) apiFile(w http.ResponseWriter, r *http.Request) {
	t, snap, _, raw, ok := s.partAt(w, r)
	if !ok {
		return
	}
	var p struct {
		GitCommit      string                `json:"git_commit"`
		RepoCheckpoint *trace.RepoCheckpoint `json:"repo_checkpoint"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.GitCommit == "" {
		httpError(w, errors.Join(errNoSuchPath, errors.New("this part records no git commit")))
		return
	}
	repo, err := t.repo(r.Context(), p.GitCommit)
	if err != nil {
		httpError(w, err)
		return
	}
	f, err := repo.file(p.GitCommit, r.URL.Query().Get("path"))
	if err != nil {
		httpError(w, err)
		return
	}
	f.Added = []int{}
	if cp := p.RepoCheckpoint; cp != nil && cp.Committed && cp.CommitAfter == p.GitCommit && slices.Contains(cp.ChangedFiles, f.Path) && !f.Binary {
		before := ""
		if b, err := repo.plainFile(cp.CommitBefore, f.Path); err == nil && !b.Binary {
			before = b.Text
		}
		f.Added, f.AddedTooLarge = addedLines(r.Context(), before, f.Text)
	}
	f.ChangedAt, f.MoreChanges, err = snap.changedAt(f.Path)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"commit": p.GitCommit, "file": f})
}

// maxChangedAt bounds the parts listed as having changed one file.
const maxChangedAt = 500

// changedAt lists the committed parts whose checkpoint changed path,
// reading only committed parts whose bytes name it.
func (s *snapshot) changedAt(path string) ([]int, bool, error) {
	out := []int{}
	f, err := os.Open(s.path)
	if err != nil {
		return out, false, err
	}
	defer f.Close()
	needle, _ := json.Marshal(path)
	for i, loc := range s.ix.Parts {
		if !loc.Committed {
			continue
		}
		raw, err := s.ix.ReadPart(f, i)
		if err != nil {
			return out, false, err
		}
		if !bytes.Contains(raw, needle) {
			continue
		}
		var p struct {
			RepoCheckpoint *trace.RepoCheckpoint `json:"repo_checkpoint"`
		}
		if json.Unmarshal(raw, &p) != nil || p.RepoCheckpoint == nil || !slices.Contains(p.RepoCheckpoint.ChangedFiles, path) {
			continue
		}
		if len(out) == maxChangedAt {
			return out, true, nil
		}
		out = append(out, int(loc.Part))
	}
	return out, false, nil
}

// TestsView is the tests tab: the score's latest counts per suite (with
// their source), per test the parts that moved it (from an evaluation), and
// apart, per test path the agent's own run_tests calls.
type TestsView struct {
	Source string             `json:"source"`
	Suites []report.SuiteRate `json:"suites"`
	Tests  []testRow          `json:"tests"`
	// Paths are the agent's run_tests calls (source run_tests).
	Paths []PathRow `json:"paths"`
	// Part, when asked for (?part=N), anchors the view: Overall and
	// AtPart are the score standing at that part (the newest result at
	// or before it), overall and per suite.
	Part    int                `json:"part,omitempty"`
	Overall *float64           `json:"overall_at_part,omitempty"`
	AtPart  map[string]float64 `json:"at_part,omitempty"`
}

// PathRow is one test path's run_tests history in the trace.
type PathRow struct {
	Path      string `json:"path"`
	Calls     int    `json:"calls"`
	Best      int    `json:"best_passed"`
	Total     int    `json:"total"`
	BestPart  int    `json:"best_part"`
	FirstPart int    `json:"first_part"`
	Last      int    `json:"last_passed"`
	LastPart  int    `json:"last_part"`
}

func (s *Server) apiTests(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	sc := snap.scores()
	v := TestsView{Source: sc.Score.Source, Suites: sc.Score.Latest, Tests: []testRow{}, Paths: []PathRow{}}
	part, err := intParam(r, "part", 0)
	if err != nil {
		httpError(w, err)
		return
	}
	if part > 0 {
		v.Part, v.AtPart = part, map[string]float64{}
		if pt, ok := sc.Score.At(part); ok {
			v.Overall = &pt.Rate
		}
		for name, pts := range sc.Score.Suites {
			if pt, ok := (report.Series{Points: pts}).At(part); ok {
				v.AtPart[name] = pt.Rate
			}
		}
	}
	if e := snap.eval; e != nil {
		v.Tests = e.tests
	}
	byPath := map[string]*PathRow{}
	for _, c := range snap.ix.Calls {
		p := byPath[c.Suite]
		if p == nil {
			p = &PathRow{Path: c.Suite, FirstPart: c.Part, Best: -1}
			byPath[c.Suite] = p
		}
		p.Calls++
		if c.Passed > p.Best {
			p.Best, p.Total, p.BestPart = c.Passed, c.Total, c.Part
		}
		p.Last, p.LastPart = c.Passed, c.Part
	}
	for _, p := range byPath {
		v.Paths = append(v.Paths, *p)
	}
	sort.Slice(v.Paths, func(i, j int) bool { return v.Paths[i].Path < v.Paths[j].Path })
	writeJSON(w, v)
}

// Compared is one trajectory on the compare page.
type Compared struct {
	Summary Summary `json:"summary"`
	Curve   Curve   `json:"curve"`
	// StartMs is the first part's time, for curves by elapsed time.
	StartMs int64 `json:"start_ms"`
	// CostAt maps parts to the cost spent by then ([part, dollars], at
	// most maxPoints), for curves by cost.
	CostAt [][2]float64 `json:"cost_at"`
	// SourceOf names the fork this trajectory was added for: the page
	// asked for the fork only, and the store holds its source.
	SourceOf string `json:"source_of,omitempty"`
}

// compared is one trajectory's summary, curve and cost by part.
func compared(snap *snapshot, id string) Compared {
	c := Compared{Summary: snap.summary(id), Curve: snap.curve(), CostAt: [][2]float64{}}
	if n := len(snap.ix.Parts); n > 0 {
		c.StartMs = snap.ix.Parts[0].Time
		for i := 0; i < n; i += max(1, n/maxPoints) {
			c.CostAt = append(c.CostAt, [2]float64{float64(snap.ix.Parts[i].Part), snap.ix.Parts[i].Cost})
		}
		if last := snap.ix.Parts[n-1]; c.CostAt[len(c.CostAt)-1][0] != float64(last.Part) {
			c.CostAt = append(c.CostAt, [2]float64{float64(last.Part), last.Cost})
		}
	}
	return c
}

// maxCompare bounds how many trajectories one compare page overlays.
const maxCompare = 60

func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	var ids []string
	for _, id := range strings.Split(r.URL.Query().Get("ids"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > maxCompare {
		httpError(w, errors.Join(errBadRequest, fmt.Errorf("ids: give 1 to %d trajectory ids, comma-separated", maxCompare)))
		return
	}
	out := []Compared{}
	shown := map[string]bool{}
	for _, id := range ids {
		_, snap, err := s.snapshot(r.Context(), id)
		if err != nil {
			httpError(w, err)
			return
		}
		out = append(out, compared(snap, id))
		shown[id] = true
	}
	// A fork's source, when the store holds it, is drawn with the fork
	// even when not asked for: the fork's own curve starts at the fork
	// point and means little alone.
	for i, n := 0, len(out); i < n; i++ {
		l := out[i].Summary.Lineage
		switch {
		case l == nil:
			continue
		case shown[l.Source]:
			l.InStore = true
			continue
		case l.Kind != "fork" || len(out) >= maxCompare || !s.here(l):
			l.InStore = s.sourceInStore(r.Context(), l)
			continue
		}
		_, snap, err := s.snapshot(r.Context(), l.Source)
		if err != nil {
			s.logger.Debug("fork's source not drawn", "source", l.Source, "err", err)
			continue
		}
		c := compared(snap, l.Source)
		c.SourceOf = out[i].Summary.ID
		l.InStore, shown[l.Source] = true, true
		out = append(out, c)
	}
	writeJSON(w, map[string]any{"trajectories": out, "milestones": milestoneRates})
}

// apiCalls serves a page of the model gateway's record: calls from..from+n-1
// by position.
func (s *Server) apiCalls(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	from, err := intParam(r, "from", 0)
	if err != nil {
		httpError(w, err)
		return
	}
	n, err := intParam(r, "n", 200)
	if err != nil {
		httpError(w, err)
		return
	}
	n = min(max(n, 1), maxPage)
	rows, total := []CallRow{}, 0
	if snap.calls != nil {
		total = len(snap.calls.rows)
		from = min(max(from, 0), total)
		rows = snap.calls.rows[from:min(from+n, total)]
	}
	writeJSON(w, map[string]any{"recorded": snap.calls != nil, "total": total, "from": from, "rows": rows})
}

// apiCall serves one model call with its response body.
func (s *Server) apiCall(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	seq, err := strconv.Atoi(r.PathValue("seq"))
	if err != nil || snap.calls == nil {
		httpError(w, errors.Join(errNoSuchPath, errors.New("no such model call")))
		return
	}
	c, err := loadCall(r.Context(), snap.st, snap.prefix, seq)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, c)
}

// spawnLookahead bounds how far after a sub-agent's last part the tool
// part that ran it is looked for (it completes when the sub-agent ends).
const spawnLookahead = 200

// spawnedBy finds the tool part that ran session (0: not found): the part
// after the session's last part whose content names it as its sub-session.
func spawnedBy(snap *snapshot, session string) int {
	ix := snap.ix
	last := 0
	for _, se := range ix.Sessions {
		if se.ID == session {
			last = se.Last
		}
	}
	start, ok := ix.Find(last)
	if !ok {
		return 0
	}
	f, err := os.Open(snap.path)
	if err != nil {
		return 0
	}
	defer f.Close()
	for i := start + 1; i < len(ix.Parts) && i <= start+spawnLookahead; i++ {
		raw, err := ix.ReadPart(f, i)
		if err != nil {
			return 0
		}
		var p struct {
			PartID   string          `json:"part_id"`
			PartType string          `json:"part_type"`
			Content  json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		if c := decodeContent(ix.reader(), p.PartID, p.PartType, p.Content); c.Tool != nil && c.Tool.ChildSessionID == session {
			return int(ix.Parts[i].Part)
		}
	}
	return 0
}
