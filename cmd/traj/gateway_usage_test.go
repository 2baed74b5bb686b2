package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/replay/view"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// gatewayUsageCases are the harnesses and a part budget that ends each
// e2e script's run in the middle of a turn, calls of it still open.
var gatewayUsageCases = []struct {
	agent, script string
	maxParts      int
}{
	{"opencode", "e2e.jsonl", 5},
	{"claude-code", "e2e-claude-code.jsonl", 15},
	{"codex", "e2e-codex.jsonl", 14},
}

// TestGatewayUsage records a trajectory with each real harness and the
// scripted model, cut by --max-parts mid-turn (how most long runs end),
// and holds every total to the model gateway's record: the trace's
// session_end, `traj trace show`, `traj report`, the viewer's summary, the
// Parquet trajectory row and ATIF's final metrics equal the sums of model_calls.jsonl to
// the token and the cent; the parts' tokens plus session_end.unattributed
// equal them too (in the trace, in Parquet's parts and in ATIF's
// entries, one per model call); every part names the call it came from
// and that call is a line of the record (in the trace, the viewer's part
// detail and Parquet's model_call_seq). Codex, whose exec stream carries no model ids, has
// a message per model response and tokens on at least 80 % of its parts.
// Each subtest records a real trajectory: run one at a time
// (-run 'TestGatewayUsage/codex').
func TestGatewayUsage(t *testing.T) {
	if testing.Short() {
		t.Skip("records real trajectories")
	}
	t.Parallel() // with the other recording tests: see main_test.go
	exe := trajExe(t)
	for _, h := range gatewayUsageCases {
		t.Run(h.agent, func(t *testing.T) {
			t.Parallel()
			if err := sandbox.BwrapWorks(t.Context()); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("bwrap unusable under CI: %v", err)
				}
				t.Skipf("bwrap unusable: %v", err)
			}
			st := t.TempDir()
			id := "usage-" + h.agent
			run := exec.Command(exe, "run", "--task", "orchestrator/testdata/tasks/e2e", "--agent", h.agent,
				"--model", "scripted/demo", "--script", "orchestrator/testdata/"+h.script, "--max-parts", fmt.Sprint(h.maxParts),
				"--timeout", "3m", "--trajectory-id", id, "--store", st, "--sandbox", sandbox.ProviderBwrap, "--quiet",
				"--disk", "off")
			run.Dir = filepath.Join("..", "..")
			out, err := run.CombinedOutput()
			if strings.Contains(string(out), "not found") && strings.Contains(string(out), "make setup") {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s missing under CI:\n%s", h.agent, out)
				}
				t.Skipf("%s needed (make setup):\n%s", h.agent, out)
			}
			if _, exit := err.(*exec.ExitError); err != nil && !exit {
				t.Fatalf("traj run: %v\n%s", err, out)
			}
			dir := filepath.Join(st, "trajectories", id)
			tr := readConformanceTrace(t, filepath.Join(dir, "agent_trace.json"), out)
			// Ground truth may call it solved; the loop still ended at
			// the part budget.
			if e := tr.SessionEnd; e == nil || e.TotalParts != h.maxParts ||
				(e.Reason != trace.EndPartLimit && !strings.Contains(e.Detail, "the loop ended: "+trace.EndPartLimit)) {
				t.Fatalf("session_end %+v: want part_limit at %d parts (a cut mid-turn)", tr.SessionEnd, h.maxParts)
			}

			// The gateway's record is the truth.
			seqs := map[int]model.Call{}
			gw, err := model.ReadRecord(filepath.Join(dir, store.ModelCallsName), func(c model.Call) error {
				seqs[c.Seq] = c
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if gw.Calls == 0 || gw.Tokens.Total() == 0 || gw.Cost <= 0 {
				t.Fatalf("model-call record: %+v", gw)
			}
			t.Logf("%s: gateway %d calls, %d tokens, $%.4f", tr.Agent, gw.Calls, gw.Tokens.Total(), gw.Cost)
			cents := func(what string, got float64) {
				t.Helper()
				if math.Round(got*100) != math.Round(gw.Cost*100) {
					t.Errorf("%s cost $%.6f, the gateway's $%.6f", what, got, gw.Cost)
				}
			}
			tokens := func(what string, got *trace.Tokens) {
				t.Helper()
				if got == nil || *got != gw.Tokens {
					t.Errorf("%s tokens %+v, the gateway's %+v", what, got, gw.Tokens)
				}
			}

			// The trace: session_end, parts + unattributed, the join.
			e := tr.SessionEnd
			tokens("session_end", e.Tokens)
			if e.Cost == nil {
				t.Fatal("session_end without cost")
			}
			cents("session_end", *e.Cost)
			if e.ModelCalls != gw.Calls || e.HarnessTokens == nil || e.Unattributed == nil {
				t.Fatalf("session_end: model_calls %d (record %d), harness_tokens %v, unattributed %v",
					e.ModelCalls, gw.Calls, e.HarnessTokens, e.Unattributed)
			}
			t.Logf("harness reported %d tokens $%.4f; unattributed %d tokens $%.4f over %d calls",
				e.HarnessTokens.Total(), *e.HarnessCost, e.Unattributed.Tokens.Total(), e.Unattributed.Cost, len(e.Unattributed.Calls))
			parts := allParts(tr)
			sum, cost := e.Unattributed.Tokens, e.Unattributed.Cost
			withTokens := 0
			messages := map[int]map[string]bool{}
			for _, p := range parts {
				if p.Tokens != nil {
					sum.Add(*p.Tokens)
					withTokens++
				}
				if p.Cost != nil {
					cost += *p.Cost
				}
				if p.ModelCall == nil {
					t.Errorf("part %d (%s): no model call", p.Part, p.PartType)
					continue
				}
				if _, ok := seqs[p.ModelCall.Seq]; !ok {
					t.Errorf("part %d: model call %d is no line of model_calls.jsonl", p.Part, p.ModelCall.Seq)
				}
				if messages[p.ModelCall.Seq] == nil {
					messages[p.ModelCall.Seq] = map[string]bool{}
				}
				messages[p.ModelCall.Seq][p.MessageID] = true
			}
			tokens("parts + unattributed", &sum)
			cents("parts + unattributed", cost)
			for _, u := range e.Unattributed.Calls {
				if _, ok := seqs[u.Seq]; !ok {
					t.Errorf("unattributed call %d is no line of model_calls.jsonl", u.Seq)
				}
			}

			if h.agent == "codex" {
				// One message per model response: the parts of a call
				// share one message id, no two calls share one.
				owner := map[string]int{}
				for seq, ms := range messages {
					if len(ms) != 1 {
						t.Errorf("call %d: %d message ids, want 1", seq, len(ms))
					}
					for m := range ms {
						if o, ok := owner[m]; ok && o != seq {
							t.Errorf("message %s holds calls %d and %d", m, o, seq)
						}
						owner[m] = seq
					}
				}
				if withTokens*10 < len(parts)*8 {
					t.Errorf("%d of %d parts carry tokens, want at least 80 %%", withTokens, len(parts))
				}
			}

			// traj trace show
			code, showOut, errOut := traj(t, "trace", "show", dir, "--json")
			var show trace.Summary
			if code != 0 || json.Unmarshal([]byte(showOut), &show) != nil {
				t.Fatalf("trace show: code %d\n%s%s", code, showOut, errOut)
			}
			tokens("trace show", show.Tokens)
			if show.Cost == nil || show.TokensSource != "model_gateway" {
				t.Fatalf("trace show: cost %v, source %q", show.Cost, show.TokensSource)
			}
			cents("trace show", *show.Cost)

			// traj report
			rep := filepath.Join(t.TempDir(), "report.json")
			if code, o, e := traj(t, "report", "--store", st, "--json", rep); code != 0 {
				t.Fatalf("report: code %d\n%s%s", code, o, e)
			}
			var report struct {
				Trajectories []struct {
					ID     string        `json:"trajectory_id"`
					Tokens *trace.Tokens `json:"tokens"`
					Cost   *float64      `json:"cost"`
				} `json:"trajectories"`
			}
			if b, err := os.ReadFile(rep); err != nil || json.Unmarshal(b, &report) != nil || len(report.Trajectories) != 1 {
				t.Fatalf("report: %v\n%.2000s", err, b)
			}
			tokens("report", report.Trajectories[0].Tokens)
			if report.Trajectories[0].Cost == nil {
				t.Fatal("report without cost")
			}
			cents("report", *report.Trajectories[0].Cost)

			checkViewUsage(t, st, id, gw, parts)
			checkParquetUsage(t, st, id, gw, e.Unattributed)
			checkATIFUsage(t, st, id, gw, e.Unattributed, len(messages))
		})
	}
}

// checkViewUsage holds the viewer's trajectory totals to the gateway's
// and each part's detail to its call: the record's row of that seq.
func checkViewUsage(t *testing.T, st, id string, gw model.Totals, parts []*trace.Part) {
	t.Helper()
	get := viewClient(t, st, "usage")
	var list struct {
		Trajectories []view.Summary `json:"trajectories"`
	}
	for range 600 { // the summary is "indexing" until the index is built
		get("/api/trajectories", &list)
		if len(list.Trajectories) == 1 && !list.Trajectories[0].Pending {
			break
		}
	}
	if len(list.Trajectories) != 1 || list.Trajectories[0].Pending {
		t.Fatalf("view: no summary of %s: %+v", id, list.Trajectories)
	}
	s := list.Trajectories[0]
	if s.Tokens == nil || *s.Tokens != gw.Tokens || s.Cost == nil || math.Round(*s.Cost*100) != math.Round(gw.Cost*100) ||
		s.HarnessTokens == nil || s.Unattributed == nil {
		t.Errorf("view summary tokens %+v cost %v (harness %v, unattributed %v), the gateway's %+v $%.6f",
			s.Tokens, s.Cost, s.HarnessTokens, s.Unattributed, gw.Tokens, gw.Cost)
	}
	for _, p := range parts {
		var d view.Detail
		get(fmt.Sprintf("/api/t/%s/parts/%d", id, p.Part), &d)
		if d.ModelCall == nil || len(d.GatewayCalls) != 1 || d.GatewayCalls[0].Seq != d.ModelCall.Seq {
			t.Errorf("view part %d: model call %+v, the record's rows %+v", p.Part, d.ModelCall, d.GatewayCalls)
		}
	}
}

// checkParquetUsage holds the Parquet trajectory row to the gateway's
// totals and the parts' rows plus unattributed to them, each part row
// joining a model_calls row.
func checkParquetUsage(t *testing.T, st, id string, gw model.Totals, un *trace.Unattributed) {
	t.Helper()
	out := t.TempDir()
	if code, o, e := traj(t, "export", id, "--store", st, "--format", "parquet", "--out", out); code != 0 {
		t.Fatalf("export parquet: code %d\n%s%s", code, o, e)
	}
	trajs, err := parquet.ReadFile[export.TrajectoryRow](filepath.Join(out, export.TableTrajectories, id+".parquet"))
	if err != nil || len(trajs) != 1 {
		t.Fatalf("trajectories table: %v (%d rows)", err, len(trajs))
	}
	r := trajs[0]
	v := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	got := trace.Tokens{Input: v(r.TokensInput), Output: v(r.TokensOutput), Reasoning: v(r.TokensReasoning),
		CacheRead: v(r.TokensCacheRead), CacheWrite: v(r.TokensCacheWrite)}
	if got != gw.Tokens || r.CostUSD == nil || math.Round(*r.CostUSD*100) != math.Round(gw.Cost*100) {
		t.Errorf("parquet trajectory row tokens %+v cost %v, the gateway's %+v $%.6f", got, r.CostUSD, gw.Tokens, gw.Cost)
	}
	if r.TokensSource == nil || *r.TokensSource != "model_gateway" || r.HarnessTokensTotal == nil ||
		r.UnattributedTokens == nil || *r.UnattributedTokens != un.Tokens.Total() {
		t.Errorf("parquet trajectory row: source %v, harness %v, unattributed %v (trace %d)",
			r.TokensSource, r.HarnessTokensTotal, r.UnattributedTokens, un.Tokens.Total())
	}
	rows, err := parquet.ReadFile[export.PartRow](filepath.Join(out, export.TableParts, id+".parquet"))
	if err != nil {
		t.Fatal(err)
	}
	calls, err := parquet.ReadFile[export.ModelCallRow](filepath.Join(out, export.TableModelCalls, id+".parquet"))
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]bool{}
	for _, c := range calls {
		seqs[c.Seq] = true
	}
	sum, cost := un.Tokens, un.Cost
	for _, p := range rows {
		sum.Add(trace.Tokens{Input: max(0, v(p.TokensInput)), Output: max(0, v(p.TokensOutput)),
			Reasoning: max(0, v(p.TokensReasoning)), CacheRead: max(0, v(p.TokensCacheRead)), CacheWrite: max(0, v(p.TokensCacheWrite))})
		if p.CostUSD != nil {
			cost += *p.CostUSD
		}
		if p.ModelCallSeq == nil || !seqs[*p.ModelCallSeq] {
			t.Errorf("parquet part %d: model_call_seq %v joins no model_calls row", p.Part, p.ModelCallSeq)
		}
	}
	if sum != gw.Tokens || math.Round(cost*100) != math.Round(gw.Cost*100) {
		t.Errorf("parquet parts + unattributed: %+v $%.6f, the gateway's %+v $%.6f", sum, cost, gw.Tokens, gw.Cost)
	}
}

// atifUsageDoc is what checkATIFUsage reads of an ATIF document.
type atifUsageDoc struct {
	Entries []struct {
		Source  string `json:"source"`
		Metrics *struct {
			Prompt     int64    `json:"prompt_tokens"`
			Completion int64    `json:"completion_tokens"`
			Cached     int64    `json:"cached_tokens"`
			Cost       *float64 `json:"cost_usd"`
		} `json:"metrics"`
		Calls *int `json:"llm_call_count"`
	} `json:"steps"`
	Final struct {
		Prompt     *int64   `json:"total_prompt_tokens"`
		Completion *int64   `json:"total_completion_tokens"`
		Cached     *int64   `json:"total_cached_tokens"`
		Cost       *float64 `json:"total_cost_usd"`
	} `json:"final_metrics"`
	Subagents []atifUsageDoc `json:"subagent_trajectories"`
}

// checkATIFUsage holds ATIF's final metrics to the gateway's totals, and
// its entries' metrics (sub-agents' included) plus unattributed to them:
// one entry per model call that produced parts (calls entries).
func checkATIFUsage(t *testing.T, st, id string, gw model.Totals, un *trace.Unattributed, calls int) {
	t.Helper()
	out := t.TempDir()
	if code, o, e := traj(t, "export", id, "--store", st, "--format", "atif", "--out", out); code != 0 {
		t.Fatalf("export atif: code %d\n%s%s", code, o, e)
	}
	b, err := os.ReadFile(filepath.Join(out, id, export.ATIFName))
	if err != nil {
		t.Fatal(err)
	}
	if probs, err := export.CheckATIF(bytes.NewReader(b)); err != nil || len(probs) > 0 {
		t.Fatalf("ATIF does not pass the v1.7 rules: %v %v", err, probs)
	}
	var doc atifUsageDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	prompt := func(tk trace.Tokens) int64 { return tk.Input + tk.CacheRead + tk.CacheWrite }
	completion := func(tk trace.Tokens) int64 { return tk.Output + tk.Reasoning }
	f := doc.Final
	if f.Prompt == nil || *f.Prompt != prompt(gw.Tokens) || f.Completion == nil || *f.Completion != completion(gw.Tokens) ||
		f.Cached == nil || *f.Cached != gw.Tokens.CacheRead || f.Cost == nil || math.Round(*f.Cost*100) != math.Round(gw.Cost*100) {
		t.Errorf("ATIF final_metrics %+v, the gateway's %+v $%.6f", f, gw.Tokens, gw.Cost)
	}
	p, c, cost, entries, callCount := prompt(un.Tokens), completion(un.Tokens), un.Cost, 0, 0
	var walk func(d atifUsageDoc)
	walk = func(d atifUsageDoc) {
		for _, e := range d.Entries {
			if e.Source != "agent" {
				continue
			}
			entries++
			if e.Metrics == nil {
				t.Errorf("ATIF agent entry %d without metrics", entries)
				continue
			}
			if e.Calls != nil {
				callCount += *e.Calls
			}
			p += e.Metrics.Prompt
			c += e.Metrics.Completion
			if e.Metrics.Cost != nil {
				cost += *e.Metrics.Cost
			}
		}
		for _, s := range d.Subagents {
			walk(s)
		}
	}
	walk(doc)
	if p != prompt(gw.Tokens) || c != completion(gw.Tokens) || math.Round(cost*100) != math.Round(gw.Cost*100) {
		t.Errorf("ATIF entries + unattributed: prompt %d completion %d $%.6f, the gateway's %d %d $%.6f",
			p, c, cost, prompt(gw.Tokens), completion(gw.Tokens), gw.Cost)
	}
	if entries != calls || callCount != calls {
		t.Errorf("ATIF: %d agent entries naming %d model calls, want one per model call with parts (%d)", entries, callCount, calls)
	}
}
