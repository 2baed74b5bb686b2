package replay_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/trajlab/traj/replay"
)

// TestMarshalIndentOutput: the report's fast encoding (part maps indented
// as they are written, shared values encoded once) gives the bytes
// json.MarshalIndent gives, whatever the maps hold.
func TestMarshalIndentOutput(t *testing.T) {
	shared := &replay.PartEvaluation{Commit: "c1", Passed: 3, Failed: 1, Total: 4, PassRate: 0.75,
		Suites: map[string]replay.SuiteSummary{"b": {Passed: 1, Total: 2, PassRate: 0.5}, "a": {Error: "build <failed> & \"quoted\"\n"}}}
	other := &replay.PartEvaluation{Commit: "c2", Suites: map[string]replay.SuiteSummary{}, Error: "no\ttree"}
	full := func() *replay.Output {
		return &replay.Output{
			TrajectoryID:      "id with \"part_to_commit\": {},\n inside",
			CommitEvaluations: map[string]*replay.CommitEvaluation{"c1": {Tree: "t", Parts: []int{1, 2, 10}, Suites: map[string]replay.SuiteResult{}}},
			PartToCommit:      replay.PartMap[string]{1: "c1", 2: "c1", 10: "c2", 3: "<&>"},
			PartEvaluations:   replay.PartMap[*replay.PartEvaluation]{1: shared, 2: shared, 10: other, 3: nil},
			TestAttribution:   map[string]*replay.Attribution{},
			TestPaths:         []string{"basics"},
		}
	}
	emptyMaps := full()
	emptyMaps.PartToCommit, emptyMaps.PartEvaluations = replay.PartMap[string]{}, nil
	for name, o := range map[string]*replay.Output{"full": full(), "empty part maps": emptyMaps, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			want, err := json.MarshalIndent(o, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got, err := replay.MarshalIndent(o)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(want, '\n')) {
				t.Errorf("MarshalIndent differs from json.MarshalIndent:\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
