package view

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// Many runs: a store of n trajectories as an experiment makes them — three
// models, two harnesses, two tasks, repeats of each — recorded with the
// real writer, scored by ground truth on parts every 10 parts (suites
// basics and wacct), with a cost on every part and the experiment's
// record naming them.
var (
	runModels    = []string{"scripted/small", "scripted/medium", "scripted/large"}
	runHarnesses = []string{"opencode@1.0.0", "claude-code@2.0.0"}
	runTasks     = []string{"c-compiler", "c-compiler-hard"}
)

func manyRunsStore(tb testing.TB, dir string, n, parts int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	var cells []string
	for i := range n {
		id := fmt.Sprintf("run-%03d", i)
		model, harness, task := runModels[i%3], runHarnesses[(i/3)%2], runTasks[(i/6)%2]
		skill := 0.35 + 0.25*float64(i%3) - 0.15*float64((i/6)%2) + 0.1*rng.Float64()
		tdir := filepath.Join(dir, store.TrajectoriesDir, id)
		if err := os.MkdirAll(tdir, 0o755); err != nil {
			tb.Fatal(err)
		}
		h := tracetest.Header(id)
		h.Agent, h.AgentModel, h.Task = harness, model, task
		w, err := trace.Create(filepath.Join(tdir, store.TraceName), h, trace.WriterOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		cost := 0.002 * float64(1+i%3)
		for p := 1; p <= parts; p++ {
			if (p-1)%50 == 0 {
				if p > 1 {
					if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(p * 60)}); err != nil {
						tb.Fatal(err)
					}
				}
				if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(p * 60), Prompt: "continue", SessionID: "ses_root"}); err != nil {
					tb.Fatal(err)
				}
			}
			part := tracetest.Part(p, tracetest.Commit(p))
			part.Timestamp = tracetest.Time(p * 60)
			part.Cost = &cost
			if p%10 == 0 {
				frac := min(1, skill*float64(p)/float64(parts)*1.6+0.05*rng.Float64())
				b, wc := int64(68*frac), int64(24*min(1, frac*1.1))
				part.GroundTruth = []trace.GroundTruth{{Part: p, Commit: part.GitCommit, Timestamp: part.Timestamp,
					Suites: []trace.SuiteCount{{Path: "basics", Passed: b, Failed: 68 - b, Total: 68, BuildOK: true}, {Path: "wacct", Passed: wc, Failed: 24 - wc, Total: 24, BuildOK: true}},
					Passed: b + wc, Failed: 92 - b - wc, Total: 92, Solved: b+wc == 92}}
			}
			if err := w.AppendPart(part); err != nil {
				tb.Fatal(err)
			}
		}
		if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(parts * 60)}); err != nil {
			tb.Fatal(err)
		}
		if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: tracetest.Time(parts*60 + 1)}, nil); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
		cells = append(cells, fmt.Sprintf(`{"trajectory_id": %q}`, id))
	}
	edir := filepath.Join(dir, "experiments", "matrix")
	if err := os.MkdirAll(edir, 0o755); err != nil {
		tb.Fatal(err)
	}
	write(tb, filepath.Join(edir, "experiment.json"), []byte(`{"name": "matrix", "cells": [`+strings.Join(cells, ",")+`]}`))
}

// TestBrowserManyRuns: the store page groups 24 runs by model with n,
// mean ± sd, best and solved per group, and compares them all; the compare
// page of 12 runs draws bands over repeats, by part, time and cost, per
// suite small multiples, one row per trajectory, and nothing overflows at
// 1,400 px.
func TestBrowserManyRuns(t *testing.T) {
	dir := t.TempDir()
	manyRunsStore(t, dir, 24, 200)
	srv, base, c := testServer(t, Options{StoreURL: dir, SummaryWait: 30 * time.Second})
	var list struct{ Trajectories []Summary }
	c.mustGet("/api/trajectories", &list)
	ctx := browser(t, 1400, 1000)
	run(t, ctx, "store page", chromedp.Navigate(base+"/?token="+srv.Token()), chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="run-023"]`)))
	js[bool](t, ctx, `(() => { const s = document.querySelector("#group-by"); s.value = "model"; s.dispatchEvent(new Event("change")); return true; })()`)
	run(t, ctx, "group by model", chromedp.WaitVisible(chromedp.CSS(`#groups tr.group`)))
	groups := js[[]map[string]string](t, ctx, `[...document.querySelectorAll("#groups tr.group")].map((r) => ({g: r.dataset.group, n: r.querySelector(".n").textContent, mean: r.querySelector(".mean").textContent}))`)
	if len(groups) != 3 {
		t.Fatalf("groups %v, want one per model", groups)
	}
	for _, g := range groups {
		var sum, n float64
		for _, s := range list.Trajectories {
			if s.Model == g["g"] && s.Score != nil {
				sum += *s.Score
				n++
			}
			if s.Experiment != "matrix" || s.Source != fromGroundTruth {
				t.Fatalf("%s: experiment %q, source %q", s.ID, s.Experiment, s.Source)
			}
		}
		if g["n"] != "8" || !strings.HasPrefix(g["mean"], fmt.Sprintf("%.1f%% ± ", 100*sum/n)) {
			t.Errorf("group %s: n %s, mean %s; want 8 and %.1f%%", g["g"], g["n"], g["mean"], 100*sum/n)
		}
	}
	// The medians to 50 %: parts, hours and dollars (a part costs
	// 0.002 × (1 + model index), a part is a minute).
	reached := 0
	for _, s := range list.Trajectories {
		p, ok := s.Milestones["0.5"]
		if !ok {
			continue
		}
		reached++
		cost := 0.002 * float64(1+slices.Index(runModels, s.Model))
		if h, d := s.Hours["0.5"], s.Dollars["0.5"]; math.Abs(h-float64(p-1)/60) > 1e-9 || math.Abs(d-cost*float64(p)) > 1e-9 {
			t.Errorf("%s reaches 50%% at part %d after %.3f h and $%.4f; want %.3f h, $%.4f", s.ID, p, h, d, float64(p-1)/60, cost*float64(p))
		}
	}
	if reached < 12 {
		t.Errorf("only %d of 24 runs reach 50%%", reached)
	}
	if b := text(t, ctx, `#compare-all`); b != "Compare all shown (24)" {
		t.Errorf("compare-all button %q", b)
	}
	run(t, ctx, "compare all shown", chromedp.Click(chromedp.CSS(`#compare-all`)), chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)))
	if n := js[int](t, ctx, `document.querySelectorAll("#compare-summary tr").length - 1`); n != 24 {
		t.Errorf("compare page lists %d trajectories, want 24", n)
	}
	noOverflow(t, ctx, "compare page (24 runs)")

	// Runs i and i+12 are repeats (same model, harness and task).
	var ids []string
	for i := range 6 {
		ids = append(ids, fmt.Sprintf("run-%03d", i), fmt.Sprintf("run-%03d", i+12))
	}
	run(t, ctx, "compare 12", chromedp.Navigate(base+"/#/compare?ids="+strings.Join(ids, ",")), chromedp.WaitVisible(chromedp.CSS(`#compare-curve svg`)))
	// 6 combinations, 2 repeats each: 6 bands.
	if n := js[int](t, ctx, `document.querySelectorAll("#compare-curve .band-area").length`); n != 6 {
		t.Errorf("%d bands over repeats, want 6", n)
	}
	if n := js[int](t, ctx, `document.querySelectorAll("#compare-suites .multiple").length`); n != 2 {
		t.Errorf("%d suite small multiples, want 2 (basics, wacct)", n)
	}
	noOverflow(t, ctx, "compare page (12 runs)")
	for _, x := range []string{"time", "cost"} {
		run(t, ctx, "x by "+x, chromedp.Click(chromedp.CSS(`#x-`+x)))
		last := js[string](t, ctx, `[...document.querySelectorAll("#compare-curve svg text")].map((e) => e.textContent).filter((s) => s.endsWith(" h") || s.startsWith("$")).pop() || ""`)
		if x == "time" && !strings.HasSuffix(last, " h") || x == "cost" && !strings.HasPrefix(last, "$") {
			t.Errorf("by %s, the x axis reads %q", x, last)
		}
	}
	noOverflow(t, ctx, "compare page by cost")
}
