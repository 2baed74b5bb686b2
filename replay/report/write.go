package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/trajlab/traj/trace"
)

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	out := struct {
		Report
		Harnesses   []HarnessRow `json:"harnesses"`
		LabelCounts []LabelCount `json:"label_counts"`
	}{r, r.ByHarness(), r.LabelCounts()}
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write report JSON: %w", err)
	}
	return nil
}

// WriteCSV writes one row per trajectory, with one pass-rate column per
// suite seen in any trajectory ("rate:<suite>").
func WriteCSV(w io.Writer, r Report) error {
	suites := r.suiteNames()
	cw := csv.NewWriter(w)
	head := []string{"trajectory_id", "agent", "harness", "harness_version", "model", "task", "parts", "turns", "end_reason", "started_at", "duration_seconds",
		"tokens_input", "tokens_output", "tokens_reasoning", "tokens_cache_read", "tokens_cache_write", "tokens_total", "cost", "pass_rate", "rate_source", "best_pass_rate", "best_part", "solved_at",
		"rerun_of", "forked_from", "fork_part"}
	for _, s := range suites {
		head = append(head, "rate:"+s)
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write report CSV: %w", err)
	}
	for _, t := range r.Trajectories {
		row := []string{t.ID, t.Agent, t.Harness, t.HarnessVersion, t.Model, t.Task, strconv.Itoa(t.Parts), strconv.Itoa(t.Turns), t.EndReason, t.StartedAt, optFloat(t.DurationSeconds, 3)}
		if tk := t.Tokens; tk != nil {
			row = append(row, i64(tk.Input), i64(tk.Output), i64(tk.Reasoning), i64(tk.CacheRead), i64(tk.CacheWrite), i64(tk.Total()))
		} else {
			row = append(row, "", "", "", "", "", "")
		}
		best, solved := "", ""
		if t.BestRate != nil {
			best = strconv.Itoa(t.BestPart)
		}
		if t.SolvedAt > 0 {
			solved = strconv.Itoa(t.SolvedAt)
		}
		fork := ""
		if t.ForkPart > 0 {
			fork = strconv.Itoa(t.ForkPart)
		}
		row = append(row, optFloat(t.Cost, 6), optFloat(t.PassRate, 4), t.RateSource, optFloat(t.BestRate, 4), best, solved,
			t.RerunOf, t.ForkedFrom, fork)
		for _, s := range suites {
			v := ""
			for _, sr := range t.Suites {
				if sr.Suite == s {
					v = strconv.FormatFloat(sr.Rate, 'f', 4, 64)
				}
			}
			row = append(row, v)
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write report CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write report CSV: %w", err)
	}
	return nil
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }

func optFloat(v *float64, prec int) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func (r Report) suiteNames() []string {
	m := map[string]bool{}
	for _, t := range r.Trajectories {
		for _, s := range t.Suites {
			m[s.Suite] = true
		}
	}
	return slices.Sorted(maps.Keys(m))
}

// WriteHTML writes r as one self-contained page: inline CSS and SVG, no
// scripts, no external resources. With one trajectory that has per-suite
// results it also shows the per-suite chart and the regressions table.
func WriteHTML(w io.Writer, r Report) error {
	v := pageView{Report: r, Single: len(r.Trajectories) == 1, Harnesses: r.ByHarness(), LabelCounts: r.LabelCounts()}
	var overall []series
	for i, t := range r.Trajectories {
		overall = append(overall, series{Name: t.ID, Points: t.ByPart, Color: color(i), End: t.Parts})
		tv := trajView{T: t}
		var ss []series
		names := slices.Sorted(maps.Keys(t.SuiteByPart))
		if len(names) > 1 {
			for j, n := range names {
				ss = append(ss, series{Name: n, Points: t.SuiteByPart[n], Color: color(j), End: t.Parts})
			}
		}
		// A fork's source, when in the report, behind it: the fork's own
		// curve from the fork point on, the source's whole.
		own := t.ByPart
		if src, ok := r.find(t.ForkedFrom); ok && t.ForkPart > 0 {
			ss = append(ss, series{Name: "source " + src.ID, Points: src.ByPart, Color: "#8c959f", End: src.Parts, Dashed: true})
			own = fromPart(t.ByPart, t.ForkPart)
		}
		// The overall rate last, so it is drawn on top.
		ss = append(ss, series{Name: "all suites", Points: own, Color: "#000000", End: t.Parts, Bold: len(names) > 1, Mark: t.ForkPart})
		width, height := 350, 190
		if v.Single {
			width, height = 1100, 360
		}
		tv.Chart = lineChart(t.ID+" — pass rate by part", ss, width, height, len(ss) > 1 || v.Single)
		v.Trajs = append(v.Trajs, tv)
	}
	if !v.Single {
		v.Overall = lineChart("Pass rate by part, all trajectories", overall, 1100, 340, true)
	}
	v.Reasons = barChart("End reasons", r.EndReasons(), 540)
	if err := pageTmpl.Execute(w, v); err != nil {
		return fmt.Errorf("write report HTML: %w", err)
	}
	return nil
}

// find is the trajectory id of r ("" or absent: false).
func (r Report) find(id string) (Trajectory, bool) {
	if id == "" {
		return Trajectory{}, false
	}
	for _, t := range r.Trajectories {
		if t.ID == id {
			return t, true
		}
	}
	return Trajectory{}, false
}

// fromPart is a curve from part p on: the rate in effect at p, then the
// points after it.
func fromPart(pts []Point, p int) []Point {
	var out []Point
	for i, pt := range pts {
		if pt.Part > p {
			if len(out) == 0 && i > 0 {
				out = append(out, Point{Part: p, Rate: pts[i-1].Rate})
			}
			out = append(out, pt)
		}
	}
	if len(out) == 0 && len(pts) > 0 {
		out = append(out, Point{Part: p, Rate: pts[len(pts)-1].Rate})
	}
	return out
}

// lineage says where a trajectory came from ("": nowhere).
func lineage(t Trajectory) string {
	switch {
	case t.ForkedFrom != "":
		return fmt.Sprintf("forked from %s at part %d", t.ForkedFrom, t.ForkPart)
	case t.RerunOf != "":
		return "rerun of " + t.RerunOf
	}
	return ""
}

type pageView struct {
	Report
	Single    bool
	Harnesses []HarnessRow
	// LabelCounts are the failure labels by harness and model.
	LabelCounts []LabelCount
	Overall     template.HTML
	Reasons     template.HTML
	Trajs       []trajView
}

type trajView struct {
	T     Trajectory
	Chart template.HTML
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"source": SourceName,
	"pct":    fmtPct,
	"rate":   func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" },
	"width": func(v *float64) string {
		if v == nil {
			return "0"
		}
		return strconv.FormatFloat(*v*100, 'f', 1, 64)
	},
	"dur":    fmtDur,
	"money":  fmtMoney,
	"tokens": fmtTokens,
	"fixed": func(p int) string {
		if p == 0 {
			return "not fixed"
		}
		return strconv.Itoa(p)
	},
	"dash":    orDash,
	"gap":     gapLabel,
	"harness": harnessLabel,
	"lineage": lineage,
	"suites":  suiteList,
}).Parse(pageHTML))

func fmtPct(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + "%"
}

func fmtDur(v *float64) string {
	if v == nil {
		return "—"
	}
	s := int64(*v)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

func fmtMoney(v *float64) string {
	if v == nil {
		return "—"
	}
	return "$" + strconv.FormatFloat(*v, 'f', 4, 64)
}

func fmtTokens(t Trajectory) string {
	if t.Tokens == nil {
		return "—"
	}
	return humanInt(t.Tokens.Total())
}

func suiteList(t Trajectory) string {
	var parts []string
	for _, s := range t.Suites {
		parts = append(parts, fmt.Sprintf("%s %d/%d", s.Suite, s.Passed, s.Total))
	}
	return strings.Join(parts, ", ")
}

func humanInt(n int64) string {
	switch {
	case n >= 10_000_000:
		return strconv.FormatInt(n/1_000_000, 10) + "M"
	case n >= 10_000:
		return strconv.FormatInt(n/1_000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1b1f24;margin:24px auto;max-width:1140px;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee4;padding-bottom:4px}
.meta{color:#57606a;margin:0 0 12px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;width:80px;height:9px;background:#eaeef2;border-radius:2px;margin-right:6px;vertical-align:middle}
.bar i{display:block;height:9px;background:#009E73;border-radius:2px}
.reason{display:inline-block;padding:0 6px;border-radius:8px;background:#eaeef2;font-size:12px}
.reason.solved{background:#d3f4e6}.reason.part_limit,.reason.timeout{background:#fbefd5}
.reason.agent_error,.reason.envoi_error{background:#fbdcd0}
.grid-charts{display:flex;flex-wrap:wrap;gap:12px}
.card{border:1px solid #d8dee4;border-radius:6px;padding:6px}
svg.chart{display:block;font:11px system-ui,"DejaVu Sans",sans-serif}
svg .title{font-size:12px;font-weight:600;fill:#1b1f24}
svg .grid{stroke:#eaeef2}svg .frame{fill:none;stroke:#afb8c1}svg .tick{stroke:#afb8c1}
svg .ylab{text-anchor:end;fill:#57606a}svg .xlab{text-anchor:middle;fill:#57606a}
svg .axis{text-anchor:middle;fill:#57606a}svg .legend{fill:#1b1f24}
svg .line{fill:none}svg .empty{text-anchor:middle;fill:#8c959f}
svg .blab{text-anchor:end;fill:#1b1f24}svg .bval{fill:#57606a}
svg .mark{stroke-width:1;stroke-dasharray:2 2}svg .marklab{fill:#57606a;font-size:10px}
.muted{color:#8c959f}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">{{len .Trajectories}} trajector{{if eq (len .Trajectories) 1}}y{{else}}ies{{end}}{{if .Source}} · {{.Source}}{{end}}</p>
{{if not .Single}}
<h2>Pass rate by part</h2>
<div class="card">{{.Overall}}</div>
<div class="grid-charts" style="margin-top:12px">{{range .Trajs}}<div class="card">{{.Chart}}</div>{{end}}</div>
{{else}}{{range .Trajs}}
<h2>Pass rate by part</h2>
<div class="card">{{.Chart}}</div>
{{end}}{{end}}
<h2>End reasons</h2>
<div class="card" style="display:inline-block">{{.Reasons}}</div>
{{if not .Single}}<h2>By harness</h2>
<table>
<thead><tr><th>harness</th><th>versions</th><th class="num">trajectories</th><th class="num">scored</th><th>mean pass rate</th><th class="num">solved</th></tr></thead>
<tbody>{{range .Harnesses}}<tr><td>{{dash .Harness}}</td><td>{{range $i, $v := .Versions}}{{if $i}} {{end}}{{$v}}{{else}}–{{end}}</td><td class="num">{{.Trajectories}}{{if .LeftOut}} <span class="muted">(+{{.LeftOut}} reruns and forks, left out)</span>{{end}}</td><td class="num">{{.Scored}}</td><td>{{pct .MeanPassRate}}</td><td class="num">{{.Solved}}</td></tr>{{end}}</tbody>
</table>
{{end}}
<h2>Trajectories</h2>
<table>
<thead><tr><th>trajectory</th><th>harness</th><th>model</th><th class="num">parts</th><th class="num">turns</th><th>end reason</th><th class="num">duration</th><th class="num">tokens</th><th class="num">cost</th><th>pass rate</th><th>latest per suite</th></tr></thead>
<tbody>
{{range .Trajectories}}<tr><td>{{.ID}}{{if .TraceID}} <span class="muted">(trace says {{printf "%q" .TraceID}})</span>{{end}}{{with lineage .}}<br><span class="muted">{{.}}</span>{{end}}</td><td>{{dash (harness .)}}</td><td>{{dash .Model}}</td><td class="num">{{.Parts}}</td><td class="num">{{.Turns}}</td><td><span class="reason {{.EndReason}}">{{dash .EndReason}}</span></td><td class="num">{{dur .DurationSeconds}}</td><td class="num">{{tokens .}}</td><td class="num">{{money .Cost}}</td><td><span class="bar"><i style="width:{{width .PassRate}}%"></i></span>{{pct .PassRate}}{{if .RateSource}} <span class="muted">({{source .RateSource}})</span>{{end}}{{if .BestRate}}<br><span class="muted">best {{pct .BestRate}} at part {{.BestPart}}{{if .SolvedAt}}, solved at part {{.SolvedAt}}{{end}}</span>{{end}}{{if .SuspectPart}}<br><span class="reason suspect" title="cases whose program did what a program ignoring its input does">suspect from part {{.SuspectPart}}{{if .FixedLike}} ({{.FixedLike}} fixed-like){{end}}</span>{{end}}{{with gap .}}<br><span class="muted">{{.}}</span>{{end}}</td><td>{{suites .}}</td></tr>
{{end}}</tbody>
</table>
{{if .LabelCounts}}<h2>Failure labels</h2>
<table>
<thead><tr><th>harness</th><th>model</th><th>label</th><th class="num">trajectories</th></tr></thead>
<tbody>{{range .LabelCounts}}<tr><td>{{dash .Harness}}</td><td>{{dash .Model}}</td><td>{{.Label}}</td><td class="num">{{.Trajectories}} of {{.Of}}</td></tr>{{end}}</tbody>
</table>
<table style="margin-top:12px">
<thead><tr><th>trajectory</th><th>label</th><th class="num">part</th><th>evidence</th></tr></thead>
<tbody>{{range $t := .Trajectories}}{{range .Labels}}<tr><td>{{$t.ID}}</td><td>{{.Label}}</td><td class="num">{{if .Part}}{{.Part}}{{else}}–{{end}}</td><td>{{.Evidence}}</td></tr>{{end}}{{end}}</tbody>
</table>
{{end}}{{range .Sweeps}}<h2>Fork sweep {{.Name}} of {{.Source}}</h2>
<p class="muted">{{.Repeats}} forks a part, model {{.Model}}, at most {{.MaxParts}} parts each; value: the best ground truth a fork reached from its fork point on. {{with .Decisive}}Decisive part: <b>{{.Part}}</b> (the value falls by {{rate .Drop}} from part {{.Before}}).{{else}}No decisive part: the value never falls.{{end}}</p>
<table>
<thead><tr><th class="num">part</th><th class="num">fork point</th><th class="num">forks</th><th class="num">counted</th><th class="num">not reproduced</th><th>mean value</th><th class="num">std</th><th class="num">min</th><th class="num">max</th><th>share solved</th></tr></thead>
<tbody>{{$d := .Decisive}}{{range .Rows}}<tr{{if $d}}{{if eq $d.Part .Part}} class="decisive"{{end}}{{end}}><td class="num">{{.Part}}{{if $d}}{{if eq $d.Part .Part}} ◀ decisive{{end}}{{end}}</td><td class="num">{{.ForkPart}}</td><td class="num">{{.Forks}}</td><td class="num">{{.Counted}}</td><td class="num">{{.NotReproduced}}</td><td>{{if .Counted}}<span class="bar"><i style="width:{{rate .Mean}}"></i></span>{{rate .Mean}}{{else}}–{{end}}</td><td class="num">{{if .Counted}}{{rate .Std}}{{else}}–{{end}}</td><td class="num">{{if .Counted}}{{rate .Min}}{{else}}–{{end}}</td><td class="num">{{if .Counted}}{{rate .Max}}{{else}}–{{end}}</td><td>{{if .Counted}}{{rate .ShareSolved}} ({{.Solved}}){{else}}–{{end}}</td></tr>{{end}}</tbody>
</table>
{{end}}{{if .Single}}{{range .Trajectories}}
<h2>Latest pass rate per suite</h2>
<table>
<thead><tr><th>suite</th><th class="num">passed</th><th class="num">total</th><th>rate</th><th class="num">at part</th></tr></thead>
<tbody>{{range .Suites}}<tr><td>{{.Suite}}</td><td class="num">{{.Passed}}</td><td class="num">{{.Total}}</td><td>{{rate .Rate}}</td><td class="num">{{.Part}}</td></tr>{{else}}<tr><td colspan="5" class="muted">no test results</td></tr>{{end}}</tbody>
</table>
<h2>Regressions</h2>
<table>
<thead><tr><th>test</th><th class="num">broken at part</th><th class="num">fixed at part</th></tr></thead>
<tbody>{{range .Regressions}}<tr><td>{{.Test}}</td><td class="num">{{.BrokenAt}}</td><td class="num">{{fixed .FixedAt}}</td></tr>{{else}}<tr><td colspan="3" class="muted">no test went from passing to failing</td></tr>{{end}}</tbody>
</table>
{{end}}{{end}}
</body>
</html>
`

// displayID is t's id, followed by the trace's own id when they disagree.
func displayID(t Trajectory) string {
	if t.TraceID == "" {
		return t.ID
	}
	return fmt.Sprintf("%s (trace says %q)", t.ID, t.TraceID)
}

// WriteText writes a plain table for a terminal.
func WriteText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRAJECTORY\tHARNESS\tMODEL\tPARTS\tTURNS\tEND\tDURATION\tTOKENS\tCOST\tPASS RATE\tSUITES")
	for _, t := range r.Trajectories {
		// Trace fields are agent-controlled: no terminal escapes get through.
		p := trace.Printable
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p(displayID(t)), p(orDash(harnessLabel(t))), p(orDash(t.Model)), t.Parts, t.Turns,
			p(orDash(t.EndReason)), fmtDur(t.DurationSeconds), fmtTokens(t), fmtMoney(t.Cost), rateWithSource(t), p(orDash(suiteList(t))))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := writeLabelsText(w, r); err != nil {
		return err
	}
	for _, sw := range r.Sweeps {
		fmt.Fprintln(w)
		if err := WriteSweepText(w, sw); err != nil {
			return err
		}
	}
	if len(r.Trajectories) < 2 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HARNESS\tVERSIONS\tTRAJECTORIES\tSCORED\tMEAN PASS RATE\tSOLVED")
	for _, h := range r.ByHarness() {
		n := strconv.Itoa(h.Trajectories)
		if h.LeftOut > 0 {
			n += fmt.Sprintf(" (+%d reruns and forks, left out)", h.LeftOut)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\n", trace.Printable(orDash(h.Harness)), trace.Printable(orDash(strings.Join(h.Versions, " "))),
			n, h.Scored, fmtPct(h.MeanPassRate), h.Solved)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// harnessLabel is the harness and its version ("opencode 1.18.33"), or the
// raw agent field when it does not parse.
func harnessLabel(t Trajectory) string {
	if t.Harness == "" {
		return t.Agent
	}
	if t.HarnessVersion == "" {
		return t.Harness
	}
	return t.Harness + " " + t.HarnessVersion
}

// rateWithSource is the pass rate with where it comes from, so rates from
// an evaluation and from the agent's own run_tests calls are never read as
// one column.
func rateWithSource(t Trajectory) string {
	if t.PassRate == nil {
		return fmtPct(nil)
	}
	return fmtPct(t.PassRate) + " (" + SourceName(t.RateSource) + ")"
}

// ChromiumArgs are the headless Chromium flags that screenshot page (an
// HTML file) to png offline, with a fresh profile folder.
func ChromiumArgs(profileDir, png, page string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profileDir, "--screenshot=" + png, "--window-size=1200,1600", "file://" + page}
}

// gapLabel is a row's public − fresh gap: the latest and the widest, in
// percentage points; "" without one.
func gapLabel(t Trajectory) string {
	if len(t.FreshGap) == 0 {
		return ""
	}
	last, wide := t.FreshGap[len(t.FreshGap)-1], t.FreshGap[0]
	for _, p := range t.FreshGap {
		if p.Rate > wide.Rate {
			wide = p
		}
	}
	pts := func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) }
	s := "public − fresh: " + pts(last.Rate) + " pts at part " + strconv.Itoa(last.Part)
	if wide.Part != last.Part {
		s += " (widest " + pts(wide.Rate) + " at part " + strconv.Itoa(wide.Part) + ")"
	}
	return s
}
