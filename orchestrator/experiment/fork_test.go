package experiment

import (
	"slices"
	"strings"
	"testing"
)

// TestForkAxis: a spec's fork axis crosses the matrix with the fork
// parts (repeats innermost), names the part in each id without changing
// the ids of a spec without one, runs traj run --fork --at-part with
// neither --agent nor --task (a fork keeps its source's), resumes without
// the fork flags, and refuses bad parts and a traj without --fork.
func TestForkAxis(t *testing.T) {
	const spec = `name: sw
matrix:
  models: [scripted/demo]
  tasks: [e2e]
  repeats: 2
fork: {from: src, at: [3, 9], prompt: "Look again."}
budget: {max_parts: 30}
run: {script: f.jsonl}
relaunch: {max_attempts: 1}
`
	s, err := Parse("sweep.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	var got []string
	for _, c := range cells {
		got = append(got, c.ID)
	}
	if len(cells) != 4 || cells[0].ForkAt != 3 || cells[1].ForkAt != 3 || cells[2].ForkAt != 9 || cells[1].Repeat != 2 || cells[2].Repeat != 1 {
		t.Fatalf("cells %+v", cells)
	}
	for i, c := range cells {
		if !strings.HasSuffix(c.ID, []string{"-p3-r1", "-p3-r2", "-p9-r1", "-p9-r2"}[i]) {
			t.Errorf("cell %d id %s", i, c.ID)
		}
	}
	if strings.TrimSuffix(got[0], "-p3-r1") == strings.TrimSuffix(got[2], "-p9-r1") {
		t.Errorf("the hash does not cover the fork part: %v", got)
	}
	// Without the axis, the ids are what they were.
	plain, err := Parse("plain.yaml", []byte(strings.Replace(spec, "fork: {from: src, at: [3, 9], prompt: \"Look again.\"}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	c0 := plain.Cells()[0]
	if want := cellID("sw", Cell{Harness: c0.Harness, Model: c0.Model, Task: c0.Task, Repeat: 1}, false); c0.ID != want || strings.Contains(c0.ID, "-p") {
		t.Errorf("a spec without fork: id %s, want %s", c0.ID, want)
	}
	flags := map[string]bool{"agent": true, "fork": true, "max-parts": true}
	args := s.RunArgs(cells[2], cells[2].ID, flags)
	line := strings.Join(args, " ")
	for _, want := range []string{"--fork src", "--at-part 9", "--prompt Look again.", "--model scripted/demo", "--max-parts 30", "--script=f.jsonl"} {
		if !strings.Contains(line, want) {
			t.Errorf("run args %q lack %q", line, want)
		}
	}
	if slices.Contains(args, "--agent") || slices.Contains(args, "--task") {
		t.Errorf("a fork's run args name the harness or task: %q", line)
	}
	if r := strings.Join(s.ResumeArgs(cells[2], cells[2].ID, flags), " "); strings.Contains(r, "--fork") || strings.Contains(r, "--at-part") {
		t.Errorf("resume args %q carry the fork flags", r)
	}
	if err := s.CheckRunFlags(map[string]bool{"max-parts": true, "script": true}); err == nil || !strings.Contains(err.Error(), "--fork") {
		t.Errorf("a traj run without --fork: %v", err)
	}
	for _, bad := range []string{"fork: {from: src, at: [0]}", "fork: {from: src, at: [3, 3]}", "fork: {at: [3]}", "fork: {from: src}"} {
		if _, err := Parse("bad.yaml", []byte(strings.Replace(spec, "fork: {from: src, at: [3, 9], prompt: \"Look again.\"}", bad, 1))); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
