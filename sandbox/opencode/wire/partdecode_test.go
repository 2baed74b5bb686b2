package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// partCases are part objects decodePart must read as encoding/json does
// (or leave to it).
var partCases = []string{
	`{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"hi\nthere \u00e9","time":{"start":1700000000000,"end":1700000000100}}`,
	`{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"tool","tool":"bash","callID":"call_1","state":{"status":"completed","input":{"command":"ls -la","description":"list"},"output":"a\nb\n","title":"ls","metadata":{"truncated":false},"time":{"start":1,"end":2}}}`,
	`{"id":"prt_3","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"tool-calls","snapshot":"abc","tokens":{"total":10,"input":5,"output":3,"reasoning":2,"cache":{"read":1.5,"write":0}},"cost":0.0012}`,
	`{"id":"prt_4","sessionID":"ses_1","messageID":"msg_1","type":"patch","hash":"deadbeef","files":["a.c","b/c.h"]}`,
	`{"id":"prt_5","type":"patch","files":[]}`,
	`{"id":"prt_6","type":"text","time":{"start":1}}`,
	`{"id":"prt_7","type":"text","text":null}`,
	`{"id":"prt_8","type":"text","ID":"other"}`,
	`{"id":"prt_9","type":"text","id":"again"}`,
	`{"id":"prt_10","type":"tool","state":{"status":"error","error":"boom","input":null}}`,
	`{"id":"prt_11","type":"text","time":{"start":1.5}}`,
	`{"id":"prt_12","type":"text","extra":[1,{"x":[true,null]}],"-":1}`,
	`{"id":"prt_13","type":"text"} trailing`,
	`{"id":"prt_14","type":"text",}`,
	`{"\u0069d":"prt_15","type":"text"}`,
	` {"id" : "prt_16" , "type" : "text" } `,
	`{"id":"prt_17","type":"step-finish","cost":1e400}`,
	`{"id":"prt_18","type":"text","text":"\ud83d\ude00 \ud800 ` + "\xff" + `"}`,
	`[]`, `null`, ``, `{`,
}

func TestDecodePartLikeEncodingJSON(t *testing.T) {
	for _, c := range partCases {
		checkDecodePart(t, []byte(c))
	}
}

// TestDecodePartReadsRecordedParts: every part OpenCode recorded in the
// fixtures is read by decodePart itself, not left to encoding/json (else
// the reader's speed is a hope).
func TestDecodePartReadsRecordedParts(t *testing.T) {
	n := 0
	for _, c := range recordedParts(t) {
		var p Part
		if !decodePart(c, &p) {
			t.Errorf("decodePart left a recorded part to encoding/json: %.200s", c)
		}
		checkDecodePart(t, c)
		n++
	}
	if n == 0 {
		t.Fatal("no recorded part found")
	}
}

// inputCases are tool arguments and metadata readToolInput and
// readMetadata must read as encoding/json does.
var inputCases = []string{
	`{"filePath":"/w/a.c","oldString":"int x;\n","newString":"long x;\n","replaceAll":true}`,
	`{"filePath":"a.c","content":"#include <stdio.h>\nint main(){}\n"}`,
	`{"command":"make test 2>&1 | tail","description":"run"}`,
	`{"description":"d","prompt":"p","subagent_type":"general"}`,
	`{"filePath":"a.c","replaceAll":"yes"}`, `{"filePath":5}`, `{"FILEPATH":"x"}`, `null`, ``, `{"truncated":true,"outputPath":"tool-output/prt_1"}`,
	`{"truncated":1}`, `{"truncated":false,"outputPath":null}`,
}

func TestToolInputLikeEncodingJSON(t *testing.T) {
	for _, c := range inputCases {
		checkToolInput(t, []byte(c))
	}
}

func FuzzDecodePart(f *testing.F) {
	for _, c := range append(partCases, inputCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodePart(t, data)
		checkToolInput(t, data)
	})
}

// checkToolInput: readToolInput and readMetadata give what
// json.Unmarshal gives, error or not.
func checkToolInput(t *testing.T, raw []byte) {
	t.Helper()
	got, err := readToolInput(raw)
	var want toolInput
	werr := json.Unmarshal(raw, &want)
	if got != want || (err == nil) != (werr == nil) {
		t.Fatalf("readToolInput(%q) = %+v, %v; encoding/json %+v, %v", raw, got, err, want, werr)
	}
	md, err := readMetadata(raw)
	var wmd toolMetadata
	werr = json.Unmarshal(raw, &wmd)
	if md != wmd || (err == nil) != (werr == nil) {
		t.Fatalf("readMetadata(%q) = %+v, %v; encoding/json %+v, %v", raw, md, err, wmd, werr)
	}
}

// checkDecodePart: what decodePart reads, encoding/json reads the same
// way.
func checkDecodePart(t *testing.T, raw []byte) {
	t.Helper()
	type plain Part
	var got Part
	if !decodePart(raw, &got) {
		return
	}
	var want Part
	if err := json.Unmarshal(raw, (*plain)(&want)); err != nil {
		t.Fatalf("decodePart read %q, which encoding/json refuses: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodePart(%q)\n got %+v\nwant %+v", raw, got, want)
	}
}

// recordedParts are the part contents of the OpenCode trace fixtures.
func recordedParts(t *testing.T) [][]byte {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../harness/testdata/opencode/agent_trace.json", "../../../replay/*/testdata/*/agent_trace.json", "../../../replay/*/testdata/*/*/agent_trace.json"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Agent string `json:"agent"`
			Turns []struct {
				Parts []struct {
					Content    json.RawMessage   `json:"content"`
					OtherParts []json.RawMessage `json:"other_parts"`
				} `json:"parts"`
			} `json:"turns"`
		}
		if err := json.Unmarshal(data, &tr); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.HasPrefix(tr.Agent, "claude") || strings.HasPrefix(tr.Agent, "codex") {
			continue
		}
		for _, turn := range tr.Turns {
			for _, p := range turn.Parts {
				if len(p.Content) > 0 {
					out = append(out, p.Content)
				}
				for _, o := range p.OtherParts {
					out = append(out, o)
				}
			}
		}
	}
	return out
}
