package batch

import (
	"maps"
	"testing"
)

func TestParseQueue(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      map[string]map[int]string
	}{
		{"split tasks", "7_0 RUNNING\n7_1 PENDING\n9_3 COMPLETING\n", map[string]map[int]string{"7": {0: "RUNNING", 1: "PENDING"}, "9": {3: "COMPLETING"}}},
		{"pending range", "12_[2-4] PENDING\n", map[string]map[int]string{"12": {2: "PENDING", 3: "PENDING", 4: "PENDING"}}},
		{"range with a limit", "12_[0-1%1] PENDING\n", map[string]map[int]string{"12": {0: "PENDING", 1: "PENDING"}}},
		{"not arrays, bad lines", "13 RUNNING\n\n14_x PENDING\n15_[3-1] PENDING\nonly\n", map[string]map[int]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseQueue([]byte(tc.out))
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for job, w := range tc.want {
				if !maps.Equal(got[job], w) {
					t.Fatalf("job %s: got %v, want %v", job, got[job], w)
				}
			}
		})
	}
}

func TestTaskIndex(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if i, ok, err := TaskIndex(env(map[string]string{"SLURM_ARRAY_TASK_ID": "3", "JOB_COMPLETION_INDEX": "5"})); i != 3 || !ok || err != nil {
		t.Errorf("Slurm: %d %v %v", i, ok, err)
	}
	if i, ok, err := TaskIndex(env(map[string]string{"JOB_COMPLETION_INDEX": "5"})); i != 5 || !ok || err != nil {
		t.Errorf("Kubernetes: %d %v %v", i, ok, err)
	}
	if _, ok, err := TaskIndex(env(nil)); ok || err != nil {
		t.Errorf("none: %v %v", ok, err)
	}
	if _, _, err := TaskIndex(env(map[string]string{"SLURM_ARRAY_TASK_ID": "-1"})); err == nil {
		t.Error("a negative index was accepted")
	}
}
