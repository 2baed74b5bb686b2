package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// snapshotTree records every file, folder and symlink under root with a
// digest of its content, so a test can prove a command changed nothing.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[rel] = "dir " + info.Mode().String()
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return out
}

// treeDiff describes how two snapshots differ ("" when equal).
func treeDiff(before, after map[string]string) string {
	var lines []string
	for p, v := range before {
		switch w, ok := after[p]; {
		case !ok:
			lines = append(lines, "removed "+p)
		case w != v:
			lines = append(lines, "changed "+p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			lines = append(lines, "created "+p)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// brokenTrajectory writes a trajectory folder name under root holding
// traceData as agent_trace.json and bundleData as repo.bundle.
func brokenTrajectory(t *testing.T, root, name string, traceData, bundleData []byte) string {
	t.Helper()
	dir := filepath.Join(root, "cases", name)
	writeFile(t, filepath.Join(dir, store.TraceName), traceData)
	writeFile(t, filepath.Join(dir, store.BundleName), bundleData)
	return dir
}

// dropPart removes part n from the trace (its turn keeps its other parts),
// leaving a gap in the part indices.
func dropPart(t *testing.T, tr *trace.Trace, n int) []byte {
	t.Helper()
	var cp trace.Trace
	raw, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	for i := range cp.Turns {
		cp.Turns[i].Parts = slices.DeleteFunc(cp.Turns[i].Parts, func(p trace.Part) bool { return p.Part == n })
	}
	out, err := json.MarshalIndent(&cp, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withOutput replaces the value of --output in args.
func withOutput(args []string, output string) []string {
	args = slices.Clone(args)
	for i, a := range args {
		if a == "--output" && i+1 < len(args) {
			args[i+1] = output
		}
	}
	return args
}

// TestBadInput is the bad-input corpus at the command line: every case
// must exit non-zero with a message that says what is wrong, and leave
// every input, the store, the current folder and would-be outputs exactly
// as they were.
func TestBadInput(t *testing.T) {
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "bad-input", Changes: replaytest.AttributionScript(),
		TurnSize: 3, TrajFields: true, History: true})
	root := t.TempDir()
	st := filepath.Join(root, "store")
	copyInto(t, st, tj)
	stTraj := filepath.Join(st, filepath.FromSlash(store.TrajectoryPrefix(tj.ID)))

	good := readFile(t, tj.TracePath)
	bundle := readFile(t, tj.BundlePath)
	if len(tj.HistoryBundles) < 2 {
		t.Fatalf("fixture has %d history bundles, want several", len(tj.HistoryBundles))
	}
	firstOnly := readFile(t, tj.HistoryBundles[0]) // only the commits up to the first checkpoint

	folders := map[string]string{
		"truncated":       brokenTrajectory(t, root, "truncated", good[:len(good)/2], bundle),
		"empty":           brokenTrajectory(t, root, "empty", nil, bundle),
		"not-json":        brokenTrajectory(t, root, "not-json", []byte("\x00\x01binary\xff"), bundle),
		"array":           brokenTrajectory(t, root, "array", []byte(`[{"turns":[]}]`), bundle),
		"gap":             brokenTrajectory(t, root, "gap", dropPart(t, tj.Trace, 5), bundle),
		"cut-bundle":      brokenTrajectory(t, root, "cut-bundle", good, bundle[:len(bundle)/2]),
		"header-bundle":   brokenTrajectory(t, root, "header-bundle", good, bundle[:min(len(bundle), 60)]),
		"garbage-bundle":  brokenTrajectory(t, root, "garbage-bundle", good, []byte("# v2 git bundle\nnot a ref\n\nPACK garbage")),
		"missing-commits": brokenTrajectory(t, root, "missing-commits", good, firstOnly),
		"good":            brokenTrajectory(t, root, "good", good, bundle),
	}
	// A trace part whose git_commit is not a hash at all.
	badCommit := bytes.ReplaceAll(good, []byte(tj.Commits[6]), []byte("../../etc/passwd"))
	folders["bad-commit"] = brokenTrajectory(t, root, "bad-commit", badCommit, bundle)

	ws := filepath.Join(root, "workspace")
	writeFile(t, filepath.Join(ws, "build.sh"), []byte("#!/bin/sh\nprintf '#!/bin/sh\\nexit 1\\n' > cc && chmod +x cc\n"))
	scripts := filepath.Join(root, "scripts")
	script := func(name, body string) string { return writeFile(t, filepath.Join(scripts, name), []byte(body)) }
	out := filepath.Join(root, "out") // outputs must never appear
	cwd := filepath.Join(root, "cwd") // default ./runs must not appear either
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	e2eTask, err := filepath.Abs("../../orchestrator/testdata/tasks/e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)

	checkout := func(ref string, part string, dest string) []string {
		return []string{"replay", "checkout-part", "--store", st, "--trajectory-id", ref, "--part=" + part, "--checkout-dest", dest,
			"--output", filepath.Join(out, "summary.json")}
	}
	dest := filepath.Join(out, "dest")
	tests := []struct {
		name string
		args []string
		code int    // 0: any non-zero code
		msg  string // the error must say this
	}{
		// Truncated or invalid traces.
		{"validate truncated", []string{"trace", "validate", folders["truncated"]}, 1, "truncated JSON"},
		{"validate empty", []string{"trace", "validate", folders["empty"]}, 1, "input ends at byte 0"},
		{"validate binary", []string{"trace", "validate", folders["not-json"]}, 1, "invalid JSON"},
		{"validate array", []string{"trace", "validate", folders["array"]}, 1, "a trace is a JSON object"},
		{"validate gap", []string{"trace", "validate", folders["gap"]}, 1, "parts 5..5 are missing"},
		{"validate missing", []string{"trace", "validate", filepath.Join(root, "absent")}, 2, "no such file"},
		{"validate folder without trace", []string{"trace", "validate", ws}, 2, "no such file"},
		{"show truncated", []string{"trace", "show", folders["truncated"]}, 1, "truncated JSON"},
		{"verify truncated trace", []string{"replay", "verify", "--store", st, "--trajectory-id", folders["truncated"]}, 1, "truncated JSON"},
		{"checkout truncated trace", checkout(folders["truncated"], "2", dest), 1, "truncated JSON"},
		{"checkout binary trace", checkout(folders["not-json"], "2", dest), 1, "invalid JSON"},
		// Gaps in part indices.
		{"verify gap", []string{"replay", "verify", "--store", st, "--trajectory-id", folders["gap"]}, 1, "part"},
		{"checkout missing part of a gap", checkout(folders["gap"], "5", dest), 0, "part 5"},
		// Truncated bundles and bundles missing commits.
		{"checkout truncated bundle", checkout(folders["cut-bundle"], "3", dest), 0, "bundle"},
		{"checkout header-only bundle", checkout(folders["header-bundle"], "3", dest), 0, "bundle"},
		{"checkout garbage bundle", checkout(folders["garbage-bundle"], "3", dest), 0, "bundle"},
		{"verify truncated bundle", []string{"replay", "verify", "--store", st, "--trajectory-id", folders["cut-bundle"]}, 0, "bundle"},
		{"checkout commit missing from bundle", checkout(folders["missing-commits"], "10", dest), 0, "not in the bundle"},
		{"verify bundle missing commits", []string{"replay", "verify", "--store", st, "--trajectory-id", folders["missing-commits"]}, 1, "not in the bundle"},
		{"checkout malformed commit", checkout(folders["bad-commit"], "7", dest), 0, "../../etc/passwd"},
		{"loose trace without bundle", []string{"replay", "verify", "--store", st, "--trace", tj.TracePath}, 2, "--trace and --bundle go together"},
		// Unknown parts.
		{"checkout part 0", checkout(tj.ID, "0", dest), 2, "parts 1..10"},
		{"checkout part -1", checkout(tj.ID, "-1", dest), 2, "parts 1..10"},
		{"checkout part 11", checkout(tj.ID, "11", dest), 2, "parts 1..10"},
		{"checkout part not a number", checkout(tj.ID, "two", dest), 2, "--part"},
		{"checkout unknown trajectory", checkout("no-such-trajectory", "1", dest), 2, "not found"},
		{"checkout trajectory id with ..", checkout("../store", "1", dest), 0, "../store"},
		{"checkout trajectory id with .. absent", checkout("../../x", "1", dest), 0, ""},
		// A destination inside the trajectory's own folders.
		{"checkout into the trajectory folder", checkout(folders["good"], "2", filepath.Join(folders["good"], "repo")), 2, "inside the trajectory's source folder"},
		{"checkout onto the trajectory folder", checkout(folders["good"], "2", folders["good"]), 2, "inside the trajectory's source folder"},
		{"checkout into the store's trajectory", checkout(tj.ID, "2", filepath.Join(stTraj, "x")), 2, "inside the trajectory's source folder"},
		{"checkout dest escaping back in", checkout(tj.ID, "2", filepath.Join(out, "..", "store", "trajectories", tj.ID, "y")), 2, "inside"},
		{"checkout into the workspace of loose files", []string{"replay", "checkout-part", "--store", st, "--trace", tj.TracePath,
			"--bundle", tj.BundlePath, "--part", "2", "--checkout-dest", filepath.Join(tj.Dir, "co")}, 2, "inside"},
		{"checkout over a non-empty folder", checkout(tj.ID, "2", ws), 2, "--force"},
		// Outputs never land in a store or over a trace (issue 11 item 5).
		{"checkout into the store", checkout(tj.ID, "2", filepath.Join(st, "repo")), 2, "inside the trajectory's source folder or a store"},
		{"checkout of a folder into the store", checkout(folders["good"], "2", filepath.Join(st, "repo")), 2, "or a store"},
		{"checkout summary over the store's trace", withOutput(checkout(tj.ID, "2", dest), filepath.Join(stTraj, store.TraceName)), 2, "inside"},
		{"checkout summary into the store", withOutput(checkout(tj.ID, "2", dest), filepath.Join(st, "summary.json")), 2, "inside"},
		{"checkout summary over another trace", withOutput(checkout(tj.ID, "2", dest), filepath.Join(folders["good"], store.TraceName)), 2, "is a trace"},
		{"checkout summary over a renamed trace", withOutput(checkout(tj.ID, "2", dest), writeFile(t, filepath.Join(root, "keep", "t.json"), good)), 2, "is a trace"},
		{"evaluate output over a trace", []string{"replay", "evaluate", "--store", st, tj.ID, "--tests", "basics/smoke",
			"--output", filepath.Join(folders["good"], store.TraceName)}, 2, "is a trace"},
		{"evaluate html into the store", []string{"replay", "evaluate", "--store", st, tj.ID, "--tests", "basics/smoke",
			"--output", filepath.Join(out, "eval.json"), "--html", filepath.Join(st, "eval.html")}, 2, "inside"},
		{"report into the store", []string{"report", "--store", st, "--html", filepath.Join(st, "report.html")}, 2, "inside"},
		{"report csv over a trace", []string{"report", "--store", st, "--csv", filepath.Join(folders["good"], store.TraceName)}, 2, "is a trace"},
		// One reference grammar (issue 11 item 11).
		{"REF and --trajectory-id disagree", []string{"replay", "verify", "--store", st, tj.ID, "--trajectory-id", "other"}, 2, "name different trajectories"},
		{"REF with loose files", []string{"replay", "verify", "--store", st, tj.ID, "--trace", tj.TracePath, "--bundle", tj.BundlePath}, 2, "not both"},
		{"no REF", []string{"replay", "verify", "--store", st}, 2, "give a trajectory REF"},
		{"sync of an s3 URL", []string{"sync", "s3://bucket/x/trajectories/" + tj.ID}, 2, "on this machine"},
		{"finalize of a folder outside trajectories/", []string{"trace", "finalize", folders["good"]}, 2, "want <work-dir>/trajectories/<id>"},
		// Test paths with .. or absolute paths.
		{"env test ..", []string{"env", "test", "..", "--workspace", ws}, 2, "unknown test path"},
		{"env test ../etc", []string{"env", "test", "../etc", "--workspace", ws}, 2, "unknown test path"},
		{"env test basics/../../etc", []string{"env", "test", "basics/../../etc", "--workspace", ws}, 2, "unknown test path"},
		{"env test absolute", []string{"env", "test", "/etc/passwd", "--workspace", ws}, 2, "unknown test path"},
		{"env test backslash", []string{"env", "test", `basics\..\..`, "--workspace", ws}, 2, "unknown test path"},
		{"env test NUL", []string{"env", "test", "basics\x00/smoke", "--workspace", ws}, 2, "unknown test path"},
		{"evaluate absolute test path", []string{"replay", "evaluate", "--store", st, "--trajectory-id", tj.ID, "--tests", "/etc",
			"--output", filepath.Join(out, "eval.json")}, 2, `"/etc"`},
		{"evaluate .. test path", []string{"replay", "evaluate", "--store", st, "--trajectory-id", tj.ID, "--tests", "basics/../..",
			"--output", filepath.Join(out, "eval.json")}, 2, `"basics/../.."`},
		// Malformed model scripts.
		{"script bad JSON", []string{"model", "serve", "--script", script("bad.jsonl", "{\"text\":\"a\"}\n{\"text\":\n")}, 2, "bad.jsonl:2"},
		{"script empty", []string{"model", "serve", "--script", script("empty.jsonl", "# nothing\n\n")}, 2, "no responses"},
		{"script unknown key", []string{"model", "serve", "--script", script("key.jsonl", `{"txt":"a"}`+"\n")}, 2, `unknown key "txt"`},
		{"script empty response", []string{"model", "serve", "--script", script("none.jsonl", "{}\n")}, 2, "empty response"},
		{"script not an object", []string{"model", "serve", "--script", script("arr.jsonl", "[1]\n")}, 2, "JSON object"},
		{"script tool without name", []string{"model", "serve", "--script", script("tool.jsonl", `{"tools":[{"args":{}}]}`+"\n")}, 2, `missing "name"`},
		{"script args not object", []string{"model", "serve", "--script", script("args.jsonl", `{"tools":[{"name":"bash","args":"ls"}]}`+"\n")}, 2, "must be a JSON object"},
		{"script impossible usage", []string{"model", "serve", "--script", script("usage.jsonl", `{"text":"a","usage":{"prompt_tokens":1,"cached_tokens":5}}`+"\n")}, 2, "cached_tokens"},
		{"script two objects on a line", []string{"model", "serve", "--script", script("two.jsonl", `{"text":"a"}{"text":"b"}`+"\n")}, 2, "extra data"},
		{"script missing", []string{"model", "serve", "--script", filepath.Join(scripts, "absent.jsonl")}, 2, "absent.jsonl"},
		{"model serve beyond loopback", []string{"model", "serve", "--script", script("ok.jsonl", `{"text":"a"}`+"\n"), "--addr", "0.0.0.0:0"}, 2, "loopback"},
		// Bad --store URLs.
		{"store unknown scheme", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "ftp://host/x"}, 0, `unsupported scheme "ftp"`},
		{"store s3 without bucket", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "s3://"}, 0, "want s3://BUCKET"},
		{"store s3 with credentials", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "s3://AKIDSECRET:hunter2@bucket/x"}, 0, "credentials do not belong in the URL"},
		{"store s3 unknown parameter", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "s3://bucket/x?acl=public"}, 0, `unknown parameter "acl"`},
		{"store s3 bad endpoint", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "s3://bucket/x?endpoint=file:///etc"}, 0, "not an http(s) URL"},
		{"store s3 prefix ..", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "s3://bucket/../x?endpoint=http://127.0.0.1:1"}, 0, `".." not allowed`},
		{"store file URL remote host", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "file://remote/x"}, 0, "remote host"},
		{"store file URL with query", []string{"replay", "verify", "--trajectory-id", tj.ID, "--store", "file:///x?y=1"}, 0, "want file:///abs/path"},
		{"report bad store", []string{"report", "--store", "gopher://x", "--html", filepath.Join(out, "r.html")}, 0, `unsupported scheme "gopher"`},
		{"run bad store", []string{"run", "--model", "scripted/demo", "--max-parts", "3", "--store", "ftp://x", "--work-dir", out}, 0, `unsupported scheme "ftp"`},
		// Bad run flags.
		{"run trajectory id ..", []string{"run", "--model", "scripted/demo", "--max-parts", "3", "--store", st, "--trajectory-id", ".."}, 0, "trajectory id"},
		{"run trajectory id with slash", []string{"run", "--model", "scripted/demo", "--max-parts", "3", "--store", st, "--trajectory-id", "a/../../b"}, 0, "trajectory id"},
		{"run existing trajectory id", []string{"run", "--task", e2eTask, "--model", "scripted/demo", "--script", script("ok5.jsonl", `{"text":"a"}`+"\n"),
			"--agent-bin", "/bin/true", "--max-parts", "3", "--store", st, "--trajectory-id", tj.ID}, 0, "already exists"},
		{"run zero budget", []string{"run", "--model", "scripted/demo", "--max-parts", "0", "--store", st}, 2, "--max-parts"},
		{"run without a budget", []string{"run", "--model", "scripted/demo", "--store", st}, 2, "--max-parts is required"},
		{"run scripted model without script", []string{"run", "--task", e2eTask, "--model", "scripted/demo", "--agent-bin", "/bin/true",
			"--max-parts", "3", "--store", st, "--work-dir", filepath.Join(out, "work")}, 0, "is served from a script: give --script"},
		{"run unreachable model endpoint", []string{"run", "--task", e2eTask, "--model", "myprov/m", "--base-url", "http://127.0.0.1:1/v1",
			"--agent-bin", "/bin/true", "--max-parts", "3", "--store", st, "--work-dir", filepath.Join(out, "work")}, 0, "http://127.0.0.1:1/v1/models of myprov/m cannot be reached"},
		{"run model without provider", []string{"run", "--model", "demo", "--max-parts", "3", "--store", st, "--work-dir", out}, 0, "PROVIDER/MODEL"},
		{"run script for another provider", []string{"run", "--model", "openai/gpt", "--script", script("ok2.jsonl", `{"text":"a"}`+"\n"),
			"--max-parts", "3", "--store", st, "--work-dir", out}, 0, "--script"},
		{"run malformed script", []string{"run", "--task", e2eTask, "--model", "scripted/demo", "--script", script("run-bad.jsonl", "{\"text\":\"a\"}\n{\"text\":\n"),
			"--agent-bin", "/bin/true", "--max-parts", "3", "--store", st, "--work-dir", filepath.Join(out, "work")}, 0, "run-bad.jsonl:2"},
		{"run without OpenCode", []string{"run", "--task", e2eTask, "--model", "scripted/demo", "--script", script("ok3.jsonl", `{"text":"a"}`+"\n"),
			"--max-parts", "3", "--store", st, "--work-dir", filepath.Join(out, "work"), "--agent-bin", filepath.Join(root, "absent", "opencode")}, 0, "opencode"},
		{"run without fixtures", []string{"run", "--task", "c-compiler", "--model", "scripted/demo", "--script", script("ok4.jsonl", `{"text":"a"}`+"\n"),
			"--agent-bin", "/bin/true", "--max-parts", "3", "--store", st, "--work-dir", filepath.Join(out, "work"), "--tests-dir", ws}, 0, "test paths"},
		// Exports that cannot succeed leave no output folder behind.
		{"export truncated trace", []string{"export", folders["truncated"], "--format", "parquet", "--out", filepath.Join(out, "export")}, 1, "could not be exported"},
		{"export not JSON", []string{"export", folders["not-json"], "--format", "parquet", "--out", filepath.Join(out, "export")}, 1, "could not be exported"},
		{"export unknown id", []string{"export", "no-such-trajectory", "--store", st, "--format", "parquet", "--out", filepath.Join(out, "export")}, 2, "no-such-trajectory"},
		{"export into the store", []string{"export", st, "--format", "parquet", "--out", filepath.Join(st, "export")}, 2, "inside"},
		{"export into the trajectory folder", []string{"export", folders["good"], "--format", "atif", "--out", filepath.Join(folders["good"], "atif")}, 2, "inside"},
		{"export unknown format", []string{"export", folders["good"], "--format", "csv", "--out", filepath.Join(out, "export")}, 2, "csv"},
		{"export store without trajectories", []string{"export", "s3://bucket/x?endpoint=http://127.0.0.1:1", "--format", "parquet", "--out", filepath.Join(out, "export")}, 0, "127.0.0.1:1"},
		{"run bad memory size", []string{"run", "--model", "scripted/demo", "--max-parts", "3", "--store", st, "--memory", "lots"}, 2, "--memory"},
		{"run unknown sandbox", []string{"run", "--model", "scripted/demo", "--max-parts", "3", "--store", st, "--sandbox", "chroot"}, 0, "--sandbox"},
		{"run unknown task", []string{"run", "--task", "no-such-task", "--model", "scripted/demo", "--max-parts", "3", "--store", st, "--work-dir", out}, 0, "no-such-task"},
	}
	before := snapshotTree(t, root)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTraj(t, tt.args...)
			if code == 0 || (tt.code != 0 && code != tt.code) {
				t.Errorf("exit %d, want %d (non-zero)\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tt.msg) {
				t.Errorf("output does not say %q:\nstdout: %s\nstderr: %s", tt.msg, stdout, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("crashed:\n%s", stderr)
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("a credential from the URL was echoed:\n%s", stderr)
			}
			after := snapshotTree(t, root)
			if d := treeDiff(before, after); d != "" {
				t.Errorf("the command changed files:\n%s", d)
				// Keep later cases independent of this one's damage.
				before = after
			}
		})
	}
}
