package secret

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestRedactTrace: every secret value (raw or as it looks inside a JSON
// string) is replaced wherever the loop writes it, through the copies the
// redactor returns: part content, other parts, envoi results, prompts,
// trailing parts. Short values are not treated as secrets, a part
// without secrets is written unchanged, and the caller's part, prompt and
// trailing parts keep their secrets (nothing is redacted in place).
func TestRedactTrace(t *testing.T) {
	password := "pw-0123456789abcdef"
	quoted := `k"ey\with/specials`
	r := NewRedactor([]string{password, quoted, "short", ""})
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	w, err := trace.Create(path, trace.Header{TrajectoryID: "redact", SessionID: "ses", Agent: "opencode",
		AgentModel: "scripted/demo", StartedAt: "2026-11-21T10:00:00.000000Z"}, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	prompt := "use " + password
	if err := w.BeginTurn(trace.TurnStart{Timestamp: "t", Prompt: r.Text(prompt)}); err != nil {
		t.Fatal(err)
	}
	escaped, _ := json.Marshal("token=" + quoted)
	content := json.RawMessage(`{"type":"tool","state":{"output":"OPENCODE_SERVER_PASSWORD=` + password + `\nshort"}}`)
	p := &trace.Part{Part: 1, Timestamp: "t", GitCommit: strings.Repeat("1", 40), Content: content,
		OtherParts: []json.RawMessage{json.RawMessage(`{"text":` + string(escaped) + `}`)},
		EnvoiCalls: []trace.EnvoiCall{{Path: "basics", Result: json.RawMessage(`{"log":"` + password + `"}`)}}}
	callerBefore, _ := json.Marshal(p)
	written := r.Part(*p)
	if err := w.AppendPart(&written); err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(p); !bytes.Equal(after, callerBefore) {
		t.Errorf("the caller's part was redacted in place:\n%s", after)
	}
	clean := trace.Part{Part: 2, Timestamp: "t", GitCommit: strings.Repeat("2", 40), Content: json.RawMessage(`{"type":"text","text":"short"}`)}
	if got := r.Part(clean); !reflect.DeepEqual(got, clean) {
		t.Errorf("a part without secrets changed: %+v", got)
	}
	if err := w.AppendPart(&clean); err != nil {
		t.Fatal(err)
	}
	trailing := []json.RawMessage{json.RawMessage(`{"text":"` + password + `"}`)}
	if err := w.EndTurn(trace.TurnEnd{EndedAt: "t", TrailingParts: r.Raws(trailing)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt, password) || !bytes.Contains(trailing[0], []byte(password)) {
		t.Error("the caller's prompt or trailing parts were written")
	}
	raw := readAll(t, path)
	for _, s := range []string{password, `k\"ey\\with/specials`} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("secret %q reached the trace", s)
		}
	}
	if n := bytes.Count(raw, []byte(Redacted)); n != 5 {
		t.Errorf("%d redactions, want 5 (prompt, content, other part, envoi result, trailing part):\n%s", n, raw)
	}
	if !bytes.Contains(raw, []byte(`"text":"short"`)) {
		t.Errorf("short value redacted:\n%s", raw)
	}
	if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
		t.Fatalf("redacted trace does not validate: %v", probs)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRedactPartEveryField: a secret in any string or raw JSON field of a
// part (filled by reflection, so a field added to trace.Part later is
// covered) is redacted, and the caller's slices and records are not
// written.
func TestRedactPartEveryField(t *testing.T) {
	secret := `s3cret&"value`
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch {
		case v.Type() == reflect.TypeFor[json.RawMessage]():
			b, _ := json.Marshal(map[string]string{"v": "x" + secret + "y"})
			v.SetBytes(b)
		case v.Kind() == reflect.String:
			v.SetString("x" + secret + "y")
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			fill(v.Index(0))
		}
	}
	var p trace.Part
	fill(reflect.ValueOf(&p).Elem())
	before, _ := json.Marshal(p)
	orig := p
	red := NewRedactor([]string{secret}).Part(p)
	after, _ := json.Marshal(red)
	for _, form := range [][]byte{[]byte(secret), []byte(`s3cret&\"value`), []byte(`s3cret\u0026\"value`)} {
		if bytes.Contains(after, form) {
			t.Errorf("secret (as %s) left in the part:\n%s", form, after)
		}
	}
	for _, caller := range []trace.Part{orig, p} {
		if again, _ := json.Marshal(caller); !bytes.Equal(again, before) {
			t.Errorf("the caller's part, slices or records were written:\n%s", again)
		}
	}
}

// BenchmarkRedactPart: the redaction every part of a real run goes
// through (the server password, an API key, a store credential; none
// occurs), on a 64 KB part.
func BenchmarkRedactPart(b *testing.B) {
	r := NewRedactor([]string{"pw-0123456789abcdef0123456789abcdef", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "AKIAIOSFODNN7EXAMPLE"})
	p := tracetest.RealisticPart(1, "0123456789abcdef0123456789abcdef01234567", 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Part(*p)
	}
}

// TestRedactGatewayCalls: the calls session_end carries (made outside
// the harness, so no part claimed them) lose every secret, in every
// field; the caller's slice is left as it was.
func TestRedactGatewayCalls(t *testing.T) {
	const s = "gw-secret-0123456789"
	in := []trace.GatewayCall{{ToolCallID: "id-" + s, Tool: "run_tests " + s, Arguments: json.RawMessage(`{"path":"` + s + `"}`),
		Start: s, Text: "answer " + s}, {ToolCallID: "clean", Tool: "run_tests", Text: "ok"}}
	before, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := NewRedactor([]string{s}).GatewayCalls(in)
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(got, []byte(s)) || strings.Count(string(got), Redacted) != 5 {
		t.Errorf("redacted calls: %s", got)
	}
	if after, _ := json.Marshal(in); !bytes.Equal(after, before) {
		t.Errorf("the caller's calls changed: %s", after)
	}
	if out[1].ToolCallID != "clean" || out[1].Text != "ok" {
		t.Errorf("a call without secrets changed: %+v", out[1])
	}
}
