package evaluation_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/trace"
)

func TestRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *trace.EnvironmentInfo
		want evaluation.Settings
	}{
		{"none", nil, evaluation.Settings{}},
		{"plain", &trace.EnvironmentInfo{Name: "c-compiler", Version: "sha256:ab"}, evaluation.Settings{}},
		{"fields", &trace.EnvironmentInfo{Version: "sha256:ab", Artifacts: []string{"cc", "rt/"}, DenyCCompiler: true},
			evaluation.Settings{Artifacts: []string{"cc", "rt/"}, DenyCCompiler: true}},
		{"fields, deny alone", &trace.EnvironmentInfo{Version: "sha256:ab", DenyCCompiler: true}, evaluation.Settings{DenyCCompiler: true}},
		// Traces recorded before the fields: the marks on the version.
		{"old marks", &trace.EnvironmentInfo{Version: "sha256:ab+artifacts=cc+deny-c-compiler"},
			evaluation.Settings{Artifacts: []string{"cc"}, DenyCCompiler: true}},
		{"old deny mark alone", &trace.EnvironmentInfo{Version: "sha256:ab+deny-c-compiler"}, evaluation.Settings{DenyCCompiler: true}},
		// A mark that is no valid artifact list is not read as one.
		{"old bad artifacts", &trace.EnvironmentInfo{Version: "sha256:ab+artifacts=../etc"}, evaluation.Settings{}},
	} {
		got := evaluation.Recorded(tc.info)
		if !slices.Equal(got.Artifacts, tc.want.Artifacts) || got.DenyCCompiler != tc.want.DenyCCompiler {
			t.Errorf("%s: Recorded = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A trace recorded before the settings were fields (a version 3 writer:
// "+artifacts=cc+deny-c-compiler" on the environment version) reads back
// the same settings, and an evaluation of it keys its results as the
// run's ground truth did: the version is the one recorded.
func TestRecordedOldTrace(t *testing.T) {
	f, err := os.Open("testdata/v3_marked_settings.agent_trace.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	info := tr.Environment
	if len(info.Artifacts) != 0 || info.DenyCCompiler {
		t.Fatalf("the fixture is not an old trace: %+v", info)
	}
	s := evaluation.Recorded(info)
	if !slices.Equal(s.Artifacts, []string{"cc"}) || !s.DenyCCompiler {
		t.Fatalf("Recorded = %+v, want artifacts [cc] and the C compiler denied", s)
	}
	const env = "sha256:3839e9bac4257c7b261ccbfc0d5abd490e8f03d905357d90ebe91aed957c0653"
	if v := evaluation.Version(env, s); v != info.Version {
		t.Errorf("key version %q, want the one the run recorded %q", v, info.Version)
	}
}

// What a run records now (Record) reads back as fields, with the version
// left the environment's own, and encodes as the schema says.
func TestRecordRoundTrip(t *testing.T) {
	s := evaluation.Settings{Artifacts: []string{"cc"}, DenyCCompiler: true}
	info := &trace.EnvironmentInfo{Name: "c-compiler", Version: "sha256:ab"}
	s.Record(info)
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"c-compiler","version":"sha256:ab","artifacts":["cc"],"deny_c_compiler":true}`; string(data) != want {
		t.Errorf("recorded %s, want %s", data, want)
	}
	var back trace.EnvironmentInfo
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got := evaluation.Recorded(&back)
	if !slices.Equal(got.Artifacts, s.Artifacts) || got.DenyCCompiler != s.DenyCCompiler {
		t.Errorf("read back %+v, want %+v", got, s)
	}
	if evaluation.Version(back.Version, got) != "sha256:ab+artifacts=cc+deny-c-compiler" {
		t.Errorf("key version %q changed from what marked traces keyed", evaluation.Version(back.Version, got))
	}
}
