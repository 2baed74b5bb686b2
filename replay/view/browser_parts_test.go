package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/trace/store"
)

// TestBrowserToolParts opens the recorded OpenCode demo without
// evaluation.json and checks each tool is drawn as what it did, from the
// harness-neutral record: an edit as a diff, a write as the file with
// line numbers, a command then its output, run_tests as a table of cases
// with the failing ones first, a sub-agent call as a link that opens the
// sub-agent's session; the raw JSON only behind a toggle.
func TestBrowserToolParts(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: sharedSample(t)})
	ctx := browser(t, 1400, 1000)
	open := func(n int, sel string) {
		t.Helper()
		run(t, ctx, fmt.Sprintf("open part %d", n),
			chromedp.Navigate(fmt.Sprintf("%s/#/t/demo-ground-truth/%d", base, n)),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#detail[data-part="%d"] %s`, n, sel))))
	}
	run(t, ctx, "sign in", chromedp.Navigate(base+"/?token="+srv.Token()), chromedp.WaitVisible(chromedp.CSS(`#trajectories`)))

	// Part 25: edit cc.sh, replacing the struct|union|switch|goto check.
	open(25, "#action-diff")
	diff := js[map[string]any](t, ctx, `(() => { const d = document.querySelector("#action-diff");
		return {add: [...d.querySelectorAll(".add")].map((e) => e.textContent).join("\n"), del: [...d.querySelectorAll(".del")].map((e) => e.textContent).join("\n"),
			head: document.querySelector("#action h2").textContent}; })()`)
	if !strings.Contains(diff["del"].(string), "-grep -Eq '\\b(struct|union|switch|goto)\\b'") || !strings.Contains(diff["add"].(string), "+grep -Eq '\\b(struct|union)\\b'") ||
		!strings.Contains(diff["head"].(string), "cc.sh") {
		t.Errorf("part 25's edit is not a diff of cc.sh: %v", diff)
	}
	if n := js[int](t, ctx, `document.querySelectorAll("#detail details pre.tool-input").length`); n != 1 {
		t.Errorf("part 25's input JSON: %d behind a toggle, want 1", n)
	}
	noOverflow(t, ctx, "edit part")

	// Its file, beside the tree: the line part 25 added is marked, and
	// the parts that changed cc.sh are links that open it at their part.
	run(t, ctx, "open cc.sh from part 25", chromedp.Click(chromedp.CSS(`#detail ul.files a`)),
		chromedp.WaitVisible(chromedp.CSS(`#code-split #tree`)), chromedp.WaitVisible(chromedp.CSS(`#code-split #file .line.added`)))
	code := js[map[string]any](t, ctx, `(() => ({added: [...document.querySelectorAll("#file .line.added")].map((e) => e.textContent).join("\n"),
		here: document.querySelector("#changed-at b").textContent, links: [...document.querySelectorAll("#changed-at a")].map((a) => +a.dataset.part),
		open: document.querySelector("#tree li.open").textContent}))()`)
	if added := code["added"].(string); !strings.Contains(added, `grep -Eq '\b(struct|union)\b'`) || strings.Count(added, "\n") > 2 {
		t.Errorf("lines marked added at part 25: %q", added)
	}
	if code["here"] != "25" || !strings.HasPrefix(code["open"].(string), "cc.sh") {
		t.Errorf("changed-at or tree: %v", code)
	}
	links := code["links"].([]any)
	if len(links) < 2 {
		t.Fatalf("cc.sh changed at parts %v besides 25, want the writes and the other edit", links)
	}
	other := int(links[len(links)-1].(float64))
	run(t, ctx, "open cc.sh at another part that changed it",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#changed-at a[data-part="%d"]`, other))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#detail[data-part="%d"][data-tab="code"] #changed-at b`, other))))
	if b := text(t, ctx, `#changed-at b`); b != fmt.Sprint(other) {
		t.Errorf("after the link, changed-at marks part %s, want %d", b, other)
	}
	noOverflow(t, ctx, "code tab")

	// Part 4: write cc.sh, a shell script: the file with line numbers.
	open(4, "#action-file")
	file := js[map[string]any](t, ctx, `(() => { const f = document.querySelector("#action-file");
		return {first: f.querySelector(".line").textContent, lines: f.querySelectorAll(".line").length, hl: f.classList.contains("hl")}; })()`)
	if !strings.HasPrefix(file["first"].(string), "1#!/bin/bash") || file["lines"].(float64) < 10 || file["hl"] != true {
		t.Errorf("part 4's write is not the file with line numbers, highlighted: %v", file)
	}

	// Part 7: bash `ls -la`: the command, then its output.
	open(7, "#action-command")
	if c, out := text(t, ctx, `#action-command`), text(t, ctx, `#detail .tool-output`); c != "$ ls -la" || !strings.Contains(out, "drwxr-xr-x") {
		t.Errorf("part 7: command %q, output %q", c, out)
	}

	// Part 13: run_tests basics, 68 cases of which 63 fail: failing first.
	open(13, "table.cases")
	cases := js[map[string]any](t, ctx, `(() => { const rows = [...document.querySelectorAll("table.cases tr.pass, table.cases tr.fail")];
		const fail = rows.map((r) => r.classList.contains("fail"));
		return {n: rows.length, fails: fail.filter(Boolean).length, firstPass: fail.indexOf(false), head: document.querySelector(".run-tests h2").textContent,
			expected: rows[0].children[3].textContent, json: document.querySelectorAll("#detail details pre.tool-output").length}; })()`)
	if cases["n"].(float64) != 68 || cases["fails"].(float64) != 63 || cases["firstPass"].(float64) != 63 || !strings.Contains(cases["head"].(string), "5/68 passed") ||
		!strings.Contains(cases["expected"].(string), "exit") || cases["json"].(float64) != 1 {
		t.Errorf("part 13's run_tests is not a case table, failing first, JSON behind a toggle: %v", cases)
	}
	noOverflow(t, ctx, "run_tests part")

	// The tool filter alone lists the two edits; a hit opens its part.
	js[bool](t, ctx, `(() => { const s = document.querySelector("#filter-tool"); s.value = "edit"; s.dispatchEvent(new Event("change")); return true; })()`)
	run(t, ctx, "filter by tool", chromedp.WaitVisible(chromedp.CSS(`#hits .hit[data-part="33"]`)))
	if hits := js[string](t, ctx, `[...document.querySelectorAll("#hits .hit")].map((h) => h.dataset.part).join(",")`); hits != "25,33" {
		t.Errorf("tool filter edit lists parts %s, want 25,33", hits)
	}
	run(t, ctx, "open a filtered part", chromedp.Click(chromedp.CSS(`#hits .hit[data-part="33"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="33"] #action-diff`)))

	// Part 45: task: a link to the sub-agent's session.
	open(45, "#sub-agent-link")
	run(t, ctx, "open the sub-agent's session", chromedp.Click(chromedp.CSS(`#sub-agent-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail .badge.sub`)))
	if d := text(t, ctx, `#detail`); !strings.Contains(d, "sub-agent of") {
		t.Errorf("the link opened a part that is not the sub-agent's:\n%s", d)
	}
}

// TestBrowserEveryHarnessTools opens the Claude Code and Codex fixtures
// (recorded by today's writer): their writes and commands are drawn as
// files and commands like OpenCode's, read by each harness's reader.
func TestBrowserEveryHarnessTools(t *testing.T) {
	root := t.TempDir()
	for _, h := range []string{"claude-code", "codex"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "sandbox", "harness", "testdata", h, store.TraceName))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, store.TrajectoriesDir, h)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, store.TraceName), data)
	}
	srv, base, c := testServer(t, Options{StoreURL: root})
	ctx := browser(t, 1400, 1000)
	run(t, ctx, "sign in", chromedp.Navigate(base+"/?token="+srv.Token()), chromedp.WaitVisible(chromedp.CSS(`#trajectories`)))
	for _, tc := range []struct{ harness, tool, sel, want string }{
		{"claude-code", "Write", "#action-file", "1#!/bin/sh"},
		{"claude-code", "Bash", "#action-command", "$ bash build.sh && ls -la"},
		{"claude-code", "mcp__tests__run_tests", "table.cases", "basics/smoke"},
		{"claude-code", "Agent", "#sub-agent-link", "open its session"},
		{"codex", "exec_command", "#action-command", "$ /bin/bash -lc"},
		{"codex", "mcp__tests__run_tests", "table.cases", "basics/smoke"},
	} {
		var page struct{ Rows []Row }
		c.mustGet("/api/t/"+tc.harness+"/parts?from=1&n=100", &page)
		n := 0
		for _, r := range page.Rows {
			if r.Tool == tc.tool {
				n = r.Part
				break
			}
		}
		if n == 0 {
			t.Fatalf("%s: no %s part", tc.harness, tc.tool)
		}
		run(t, ctx, fmt.Sprintf("%s part %d (%s)", tc.harness, n, tc.tool),
			chromedp.Navigate(fmt.Sprintf("%s/#/t/%s/%d", base, tc.harness, n)),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#detail[data-part="%d"] %s`, n, tc.sel))))
		if got := text(t, ctx, `#detail `+tc.sel); !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %s shows %q, want %q", tc.harness, tc.tool, tc.sel, clip(got, 200), tc.want)
		}
	}
}
