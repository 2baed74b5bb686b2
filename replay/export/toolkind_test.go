package export_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/export"
)

// TestToolKindsAcrossHarnesses exports the three harnesses' recorded
// traces (real harness, scripted model: sandbox/harness/testdata) and
// queries their parts tables together with DuckDB by the neutral
// columns: each harness's own tool names (bash, Bash, exec_command;
// tests_run_tests, mcp__tests__run_tests) meet in one tool_kind, every
// tool part has one, shell calls carry their command and exit code, and
// no harness's tool_input keeps the \u003c-style escapes another's lacks.
func TestToolKindsAcrossHarnesses(t *testing.T) {
	var files []string
	for _, h := range []string{"opencode", "claude-code", "codex"} {
		out := filepath.Join(t.TempDir(), h)
		if _, err := export.Run(t.Context(), []string{harnessFixture(h)}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: t.TempDir(), Version: "test"}); err != nil {
			t.Fatalf("export %s: %v", h, err)
		}
		f, _ := filepath.Glob(filepath.Join(out, "parts", "*.parquet"))
		if len(f) != 1 {
			t.Fatalf("%s: parts tables %v", h, f)
		}
		files = append(files, sqlPath(f[0]))
	}
	from := "read_parquet([" + strings.Join(files, ", ") + "])"
	res := duckdb(t,
		`SELECT harness, tool_kind, count(*) AS n, count(command) AS commands, count(exit_code) AS exits,
			count(file_path) AS paths, string_agg(DISTINCT tool, ',' ORDER BY tool) AS tools
		FROM `+from+` WHERE part_type = 'tool' GROUP BY ALL ORDER BY ALL`,
		`SELECT count(*) AS escaped FROM `+from+` WHERE tool_input LIKE '%\u003c%' OR tool_input LIKE '%\u003e%' OR tool_input LIKE '%\u0026%'`,
		`SELECT harness, count(*) AS plain FROM `+from+` WHERE tool_kind = 'shell' AND (tool_input LIKE '%>%' OR tool_input LIKE '%&%') GROUP BY ALL ORDER BY ALL`,
		`SELECT harness, count(*) AS failed FROM `+from+` WHERE tool_kind = 'shell' AND exit_code <> 0 GROUP BY ALL`)
	kinds := map[string]map[string]map[string]any{} // harness → kind → row
	for _, row := range res[0] {
		h, _ := row["harness"].(string)
		k, _ := row["tool_kind"].(string)
		if kinds[h] == nil {
			kinds[h] = map[string]map[string]any{}
		}
		kinds[h][k] = row
		t.Logf("%-11s %-9s n=%v commands=%v exits=%v paths=%v tools=%v", h, k, row["n"], row["commands"], row["exits"], row["paths"], row["tools"])
	}
	count := func(row map[string]any, col string) int {
		n, _ := num(t, row[col])
		return int(n)
	}
	for _, h := range []string{"opencode", "claude-code", "codex"} {
		if len(kinds[h]) == 0 {
			t.Errorf("%s: no tool parts", h)
			continue
		}
		if row, ok := kinds[h][""]; ok {
			t.Errorf("%s: %d tool parts without a tool_kind (tools %v)", h, count(row, "n"), row["tools"])
		}
		for _, k := range []string{"shell", "run_tests"} {
			if kinds[h][k] == nil {
				t.Errorf("%s: no %s parts", h, k)
			}
		}
		if row := kinds[h]["shell"]; row != nil {
			if n := count(row, "n"); count(row, "commands") != n || count(row, "exits") != n {
				t.Errorf("%s: %d shell parts, %d with a command, %d with an exit code", h, n, count(row, "commands"), count(row, "exits"))
			}
		}
		for k, row := range kinds[h] {
			if (k == "write" || k == "edit" || k == "read") && count(row, "paths") != count(row, "n") {
				t.Errorf("%s: %d %s parts, %d with a file_path", h, count(row, "n"), k, count(row, "paths"))
			}
		}
	}
	want := map[string]string{"opencode": "bash", "claude-code": "Bash", "codex": "exec_command"}
	for h, tool := range want {
		if row := kinds[h]["shell"]; row == nil || !strings.Contains(fmt.Sprint(row["tools"]), tool) {
			t.Errorf("%s: shell parts' tools %v, want %s among them", h, row["tools"], tool)
		}
	}
	if n, _ := num(t, res[1][0]["escaped"]); n != 0 {
		t.Errorf("%v tool inputs keep an HTML escape (\\u003c, \\u003e, \\u0026)", n)
	}
	plain := map[string]int{}
	for _, row := range res[2] {
		plain[row["harness"].(string)] = count(row, "plain")
	}
	if plain["codex"] == 0 {
		t.Errorf("no Codex shell input shows > or & as itself (its recorded arguments escape them): %v", plain)
	}
	t.Logf("shell inputs with > or &: %v; shell parts that exited non-zero: %v", plain, res[3])
}
