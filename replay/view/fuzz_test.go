package view

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// FuzzIndex feeds the hand-rolled trace scanner arbitrary bytes: it never
// panics, a part it reports lies inside the input as one JSON object, and
// on a trace the reference reader (trace.Read) accepts it finds the same
// parts.
func FuzzIndex(f *testing.F) {
	dir := f.TempDir()
	for i, spec := range []tracetest.Spec{
		{Turns: []int{2}},
		{Turns: []int{1, 2}, PartSize: 1200, End: trace.EndSolved,
			EnvoiCalls: map[int][]trace.EnvoiCall{2: {tracetest.RunTests("basics", 1, 2)}}},
	} {
		p := tracetest.Write(f, filepath.Join(dir, string(rune('a'+i))+".json"), spec)
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(tracetest.OriginalTrace())
	f.Add([]byte(`{"turns":[{"parts":[{"part":1,"content":"]}\"{"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ix Index
		err := ix.Update(bytes.NewReader(data), int64(len(data)))
		if err == nil {
			for _, p := range ix.Parts {
				end := p.Off + int64(p.Len)
				if p.Off < 0 || end > int64(len(data)) || data[p.Off] != '{' || data[end-1] != '}' {
					t.Fatalf("part %d at [%d,%d) is not an object inside the %d-byte input", p.Part, p.Off, end, len(data))
				}
			}
		}
		tr, rerr := trace.Read(bytes.NewReader(data))
		if rerr != nil {
			return
		}
		want := 0
		for _, turn := range tr.Turns {
			want += len(turn.Parts)
		}
		if err != nil || len(ix.Parts) != want {
			t.Fatalf("trace.Read finds %d parts; the index %d (err %v)", want, len(ix.Parts), err)
		}
	})
}

// FuzzEvalReport feeds the evaluation reader arbitrary bytes: it never
// panics, and whenever encoding/json decodes the text as a whole report,
// the reader succeeds with the same part evaluations and attribution.
func FuzzEvalReport(f *testing.F) {
	demo, err := os.ReadFile(filepath.Join(demoDir, store.EvaluationName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	f.Add([]byte(`{"part_evaluations": {"1": {"passed": 1, "total": 2, "suites": {"a": {"passed": 1}}}, "2": {"passed": 1, "total": 2, "suites": {"a": {"passed": 1}}}}, "test_attribution": {"a/x": {"first_pass_part": 1, "broken_at": [], "fixed_at": [], "passing_at_end": true}}}`))
	f.Add([]byte(`{"commit_evaluations": {"c": {"suites": {"s": {"cases": [{"name": "q\"}]{[", "passed": true}]}}}}, "part_evaluations": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rep evalReport
		_, err := rep.ReadFrom(chunkReader{bytes.NewReader(data), 13})
		var full replay.Output
		if json.Unmarshal(data, &full) != nil {
			return
		}
		if err != nil {
			t.Fatalf("the whole report decodes, the reader says: %v", err)
		}
		if !reflect.DeepEqual(rep.out.PartEvaluations, full.PartEvaluations) || !reflect.DeepEqual(rep.out.TestAttribution, full.TestAttribution) {
			t.Fatalf("read differently from the whole report:\n%+v\n%+v", rep.out, full)
		}
	})
}
