package export

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// scanned is what a walk of a trace called back with, in order.
type scanned struct {
	Header *trace.Header
	Parts  []scannedPart
	Turns  []trace.Turn
	End    *trace.Trace
	Err    bool
}

type scannedPart struct {
	Turn int
	Part trace.Part
}

// scanBoth walks the trace at path with trace.Scan and with readTrace.
func scanBoth(t *testing.T, path string) (old, fast scanned) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = trace.Scan(f, trace.Visitor{
		OnHeader: func(h *trace.Header) error { old.Header = h; return nil },
		OnPart: func(turn int, p *trace.Part) error {
			old.Parts = append(old.Parts, scannedPart{turn, *p})
			return nil
		},
		OnTurn: func(_ int, tu *trace.Turn) error { old.Turns = append(old.Turns, *tu); return nil },
		OnEnd:  func(tr *trace.Trace) error { old.End = tr; return nil },
	})
	old.Err = err != nil
	err = readTrace(context.Background(), path, 2, readOptions{otherUsage: true}, traceVisitor{
		OnHeader: func(h *trace.Header) error { fast.Header = h; return nil },
		OnPart: func(turn int, d *decodedPart) error {
			p := d.Part
			// Slices of the read's buffers, copied as Scan's are.
			p.Content = slices.Clone(p.Content)
			fast.Parts = append(fast.Parts, scannedPart{turn, p})
			return nil
		},
		OnTurn: func(_ int, tu *trace.Turn) error { fast.Turns = append(fast.Turns, *tu); return nil },
		OnEnd:  func(tr *trace.Trace) error { fast.End = tr; return nil },
	})
	fast.Err = err != nil
	if old.Err {
		// What was called back before the error may differ (the read
		// decodes ahead); that both refuse is what counts.
		old, fast = scanned{Err: true}, scanned{Err: fast.Err}
	}
	return old, fast
}

// TestReadTraceMatchesScan: the export's read gives what trace.Scan gives
// for every trace — recorded by each harness, synthetic, the original
// recorder's, and odd ones — and refuses what Scan refuses.
func TestReadTraceMatchesScan(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	synth, err := json.Marshal(tracetest.Build(tracetest.Spec{TrajectoryID: "s", Turns: []int{3, 0, 70, 2}, PartSize: 3000, End: trace.EndSolved}))
	if err != nil {
		t.Fatal(err)
	}
	// A part of synth, for the odd ones.
	part := `{"part":1,"timestamp":"2026-11-01T12:00:01Z","session_id":"ses_root","part_type":"text","content":{"id":"p1","messageID":"m","sessionID":"ses_root","type":"text","text":"hi"}}`
	doc := func(parts ...string) []byte {
		return []byte(`{"schema_version":"1","trajectory_id":"odd","session_id":"ses_root","agent":"opencode","turns":[{"turn":1,"parts":[` +
			strings.Join(parts, ",") + `]}],"session_end":{"reason":"part_limit"}}`)
	}
	// The same, recorded by another harness (each reader reads the
	// content; one that reads it has decoded, hence checked, it).
	docAs := func(agent string, parts ...string) []byte {
		return []byte(strings.Replace(string(doc(parts...)), `"agent":"opencode"`, `"agent":"`+agent+`"`, 1))
	}
	huge := strings.Repeat("x\\n\\u00e9\\\"", 300_000)
	cases := map[string]string{
		"demo":     "testdata/demo/agent_trace.json",
		"opencode": "../../sandbox/harness/testdata/opencode/agent_trace.json",
		"claude":   "../../sandbox/harness/testdata/claude-code/agent_trace.json",
		"codex":    "../../sandbox/harness/testdata/codex/agent_trace.json",
		"synth":    write("synth", synth),
		"original": write("original", tracetest.OriginalTrace()),
		// Odd keys: another case, an escape, unknown, twice.
		"key case":      write("kc", doc(`{"Part":1,"CONTENT":{"type":"text","text":"a"}}`)),
		"key escaped":   write("ke", doc(`{"par\u0074":7,"content":{"type":"text","text":"a"}}`)),
		"key unknown":   write("ku", doc(`{"part":1,"future":{"x":[1]},"tool":"bash"}`)),
		"key twice":     write("k2", doc(`{"part":1,"repo_checkpoint":{"commit_after":"a"},"repo_checkpoint":{"committed":true},"part":2}`)),
		"nulls":         write("nl", doc(`{"part":null,"content":null,"other_parts":null,"sessions":null,"timestamp":null,"tokens":null,"envoi_calls":null}`)),
		"empty lists":   write("el", doc(`{"part":1,"sessions":[],"new_messages":[ ],"other_parts":[],"envoi_calls":[],"session_ids":[]}`)),
		"strings":       write("st", doc(`{"part":1,"tool":"b\u00e9sh","prompt":"é ✓ \ud83d\ude00","part_id":"a\tb","message_id":"\ud800"}`)),
		"invalid utf-8": write("iu", doc("{\"part\":1,\"tool\":\"b\xff\xfeh\",\"content\":{\"type\":\"text\",\"text\":\"\xc3(\"}}")),
		"huge string":   write("hs", doc(`{"part":1,"part_type":"text","content":{"id":"p","messageID":"m","sessionID":"ses_root","type":"text","text":"`+huge+`"}}`)),
		"numbers":       write("nu", doc(`{"part":1e0,"cost":1.5e-3}`, `{"part":007}`)),
		"white space":   write("ws", []byte(" \n{ \"turns\" : [ { \"parts\" : [ "+part+" , "+part+" ] , \"turn\" : 1 } ] , \"agent\" : \"opencode\" }\n\n")),
		"agent after":   write("aa", []byte(`{"turns":[{"parts":[`+part+`]}],"agent":"codex","session_id":"x"}`)),
		"turns null":    write("tn", []byte(`{"agent":"opencode","turns":null,"trajectory_id":"x"}`)),
		"no turns":      write("nt", []byte(`{"agent":"opencode","trajectory_id":"x"}`)),
		"no parts key":  write("np", []byte(`{"turns":[{"turn":1},{"turn":2,"parts":null},{"parts":[],"turn":3}]}`)),
		"other parts":   write("op", doc(`{"part":1,"other_parts":[ {"type":"step-finish","tokens":{"input":5}} , {"type":"text"} ]}`)),
		"many batches":  write("mb", doc(slices.Repeat([]string{part}, 500)...)),
		// Refused by Scan, so refused here.
		"truncated":               write("tr", synth[:len(synth)/2]),
		"truncated at end":        write("te", synth[:len(synth)-1]),
		"data after":              write("da", append(slices.Clone(synth), []byte(` {}`)...)),
		"content not JSON":        write("cj", doc(`{"part":1,"content":{"type":"text","text":tru}}`)),
		"content bad escape":      write("ce", doc(`{"part":1,"content":{"type":"text","text":"\x"}}`)),
		"content bad string":      write("cs", doc("{\"part\":1,\"content\":{\"type\":\"text\",\"text\":\"a\x01b\"}}")),
		"claude content not JSON": write("cc", docAs("claude-code", `{"part":1,"part_id":"u:0","content":[{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}},tru]}`)),
		"claude line not JSON":    write("cl", docAs("claude-code", `{"part":1,"part_id":"u:0","content":{"type":"assistant","uuid":"u","message":{"id":"m","content":[{"type":"text","text":"hi"}]},x}}`)),
		"codex content not JSON":  write("cx", docAs("codex", `{"part":1,"part_id":"i:0","content":[{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"hi"}},nul]}`)),
		"other parts bad":         write("ob", doc(`{"part":1,"other_parts":[{"a":1,}]}`)),
		"other parts object":      write("oo", doc(`{"part":1,"other_parts":{"a":1}}`)),
		"part a string":           write("ps", doc(`{"part":"1"}`)),
		"part fraction":           write("pf", doc(`{"part":1.5}`)),
		"tool a number":           write("tl", doc(`{"part":1,"tool":5}`)),
		"string with control":     write("sc", doc("{\"part\":1,\"tool\":\"a\nb\"}")),
		"missing comma":           write("mc", doc(`{"part":1 "tool":"x"}`)),
		"turns a number":          write("t5", []byte(`{"turns":5}`)),
		"parts a string":          write("p5", []byte(`{"turns":[{"parts":"x"}]}`)),
		"turn field bad":          write("tf", []byte(`{"turns":[{"turn":"x","parts":[]}]}`)),
		"header bad":              write("hb", []byte(`{"agent":5,"turns":[]}`)),
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			old, fast := scanBoth(t, path)
			if !reflect.DeepEqual(old, fast) {
				o, _ := json.Marshal(old)
				f, _ := json.Marshal(fast)
				t.Fatalf("trace.Scan and readTrace differ:\n%.3000s\n%.3000s", o, f)
			}
		})
	}
	// The refusals above only count if Scan does refuse them.
	for _, name := range []string{"truncated", "truncated at end", "data after", "content not JSON", "content bad escape",
		"content bad string", "claude content not JSON", "claude line not JSON", "codex content not JSON", "other parts bad", "other parts object", "part a string", "part fraction", "tool a number",
		"string with control", "missing comma", "turns a number", "parts a string", "turn field bad", "header bad"} {
		if old, _ := scanBoth(t, cases[name]); !old.Err {
			t.Errorf("%s: trace.Scan accepts it", name)
		}
	}
}

// TestDecodePartKnowsEveryField: decodePart's names are trace.Part's.
func TestDecodePartKnowsEveryField(t *testing.T) {
	var names []string
	rt := reflect.TypeFor[trace.Part]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
		if _, ok := partFields[name]; !ok {
			t.Errorf("trace.Part's %q is not in partFields", name)
		}
	}
	if len(partFields) != len(names) {
		t.Errorf("partFields has %d names, trace.Part %d", len(partFields), len(names))
	}
}

// FuzzDecodePart: decodePart is json.Unmarshal, value and error, with
// the content's syntax checked where the read reads it
// (readOptions.prepare).
func FuzzDecodePart(f *testing.F) {
	f.Add([]byte(`{"part":1,"tool":"bash","content":{"a":[1,"}"]},"other_parts":[{"b":2}],"sessions":[]}`))
	f.Add([]byte(`{"part":01,"Tool":"x","tool":"y"}`))
	f.Add([]byte(`{"part":1,"git_commit":"\u00e9","cost":null,"other_parts":[1 2]}`))
	f.Add([]byte(`{"part":1,"part":null,"tokens":{"input":1},"tokens":{"output":2},"other_parts":[3],"other_parts":[]}`))
	f.Add([]byte(`{}0`))
	f.Add([]byte(`{"repo_checkpoint":{"commit_before":"a","commit_after":"b","committed":true,"changed_files":["x","y"],"deferred":false,"agent_git_head":"c"},"tokens":{"input":1,"output":20,"reasoning":0,"cache_read":3,"cache_write":4},"session_ids":["s","t"]}`))
	f.Add([]byte(`{"repo_checkpoint":{"changed_files":["x","y","z"]},"repo_checkpoint":{"changed_files":["q"],"committed":null},"tokens":{"input":-1},"tokens":{"output":1e2}}`))
	f.Add([]byte(`{"repo_checkpoint":{"Committed":true,"changed_files":null},"tokens":{"input":01},"session_ids":["a",null]}`))
	f.Add([]byte(`{"repo_checkpoint":null,"tokens":{},"session_ids":[]}`))
	f.Add([]byte("{\"part\":1}\f"))
	f.Add([]byte(`{"content":{]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want, got trace.Part
		werr := json.Unmarshal(raw, &want)
		gerr := decodePart(raw, &got)
		if gerr == nil && len(got.Content) > 0 && !json.Valid(got.Content) {
			gerr = errors.New("content: invalid JSON")
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: json.Unmarshal %v, decodePart %v", raw, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: json.Unmarshal %+v, decodePart %+v", raw, want, got)
		}
	})
}

// TestExportIgnoresPartIndex: an export reads the trace, not its part
// index: with the index of another trace beside it, or none, the files
// are the same bytes.
func TestExportIgnoresPartIndex(t *testing.T) {
	src, other := filepath.Join(t.TempDir(), "ix"), t.TempDir()
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, src, tracetest.Spec{TrajectoryID: "ix", Turns: []int{4, 3}, PartSize: 500})
	tracetest.WriteDir(t, other, tracetest.Spec{TrajectoryID: "ix", Turns: []int{2, 9}, PartSize: 90})
	index := trace.PartIndexPath(filepath.Join(src, "agent_trace.json"))
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("the writer left no part index: %v", err)
	}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	export := func() map[string][]byte {
		t.Helper()
		out := t.TempDir()
		if _, err := Run(context.Background(), []string{src}, Options{Format: FormatParquet, Out: out, Now: func() time.Time { return now }}); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, table := range TableNames() {
			data, err := os.ReadFile(filepath.Join(out, table, "ix.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			files[table] = data
		}
		return files
	}
	want := export()
	stale, err := os.ReadFile(trace.PartIndexPath(filepath.Join(other, "agent_trace.json")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := export(); !reflect.DeepEqual(got, want) {
		t.Error("another trace's part index changed the export")
	}
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if got := export(); !reflect.DeepEqual(got, want) {
		t.Error("a missing part index changed the export")
	}
}

// TestMarshalPartExtra: a part's extra written by hand, verbatim values
// copied when canonical, is json.Marshal's bytes; and an entry with its
// parts spliced in is Marshal's entry.
func TestMarshalPartExtra(t *testing.T) {
	var parts []trace.Part
	for _, path := range []string{"testdata/demo/agent_trace.json", "../../sandbox/harness/testdata/claude-code/agent_trace.json",
		"../../sandbox/harness/testdata/codex/agent_trace.json"} {
		old, _ := scanBoth(t, path)
		for _, p := range old.Parts {
			parts = append(parts, p.Part)
		}
	}
	for _, content := range []string{`{ "a" : 1 }`, `{"a":"<b>&\u2028"}`, "{\"a\":\"\u2028\u2029\"}", `{"a":"x y","b":[1, 2]}`,
		`{"a":"\\\"< "}`, `{"a":"\"", "b":1}`, `[1,"]",{"\\\\":"\""}]`, `"plain"`, `null`} {
		parts = append(parts, trace.Part{Part: 1, Content: json.RawMessage(content), OtherParts: []json.RawMessage{json.RawMessage(content), []byte(`{}`)},
			Sessions: []json.RawMessage{json.RawMessage(content)}, Prompt: "<p>", Tool: "a&b"})
	}
	turns := []trace.Turn{{Prompt: "<p>"}}
	var all [][]byte
	var want []map[string]any
	for i := range parts {
		got, err := marshalPartExtra(&parts[i], turns, 0)
		if err != nil {
			t.Fatal(err)
		}
		x := partExtra(&parts[i], turns, 0)
		exp, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(exp) {
			t.Fatalf("part %d: marshalPartExtra\n%s\njson.Marshal\n%s", i, got, exp)
		}
		all, want = append(all, got), append(want, x)
	}
	for _, sid := range []string{"ses_root", `a"<b>`, ""} {
		traj := map[string]any{"message_id": "m", "session_id": sid, "metrics_source": "x"}
		ent := atifEntry{EntryID: 3, Source: "agent", Message: `he said "parts":0,"session_id":`, traj: traj, parts: all}
		got, err := ent.marshal()
		if err != nil {
			t.Fatal(err)
		}
		plain := atifEntry{EntryID: 3, Source: "agent", Message: ent.Message,
			Extra: map[string]any{"traj": map[string]any{"message_id": "m", "session_id": sid, "metrics_source": "x", "parts": want}}}
		exp, err := json.Marshal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(exp) {
			t.Fatalf("session %q: marshalEntry\n%.2000s\njson.Marshal\n%.2000s", sid, got, exp)
		}
	}
}

// TestReadTraceStops: a visitor's error, or a cancelled context, stops
// the read mid-trace with that error, and its goroutines end.
func TestReadTraceStops(t *testing.T) {
	data, err := json.Marshal(tracetest.Build(tracetest.Spec{TrajectoryID: "s", Turns: []int{400, 400}, PartSize: 2000}))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	stop := errors.New("enough")
	n := 0
	err = readTrace(context.Background(), path, 2, readOptions{reuse: true}, traceVisitor{OnPart: func(int, *decodedPart) error {
		if n++; n == 100 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) || n != 100 {
		t.Fatalf("visitor's error: got %v after %d parts", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	err = readTrace(ctx, path, 2, readOptions{}, traceVisitor{OnPart: func(int, *decodedPart) error {
		if n++; n == 50 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || n >= 800 {
		t.Fatalf("cancelled: got %v after %d parts", err, n)
	}
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines before the reads, %d after", before, runtime.NumGoroutine())
}
