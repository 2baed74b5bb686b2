package evalarray

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden manifest")

// TestKubeManifest: the Indexed Job of an evaluation, golden; fewer trees
// than tasks make one task per tree.
func TestKubeManifest(t *testing.T) {
	trees := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)}
	y, err := KubeManifest(Kube{Name: "Traj_Demo.1", Namespace: "research", Image: "registry.example/traj:1", StoreClaim: "traj-runs",
		Secret: "traj-store", Trees: trees, Tasks: 8,
		TaskArgs: []string{"replay", "evaluate-task", "traj_demo.1", "--store", "/runs", "--tests", "basics", "--sandbox", "bwrap"}})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "evaluate-kube.yaml")
	if *update {
		if err := os.WriteFile(golden, y, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(y) {
		t.Fatalf("manifest differs from %s (go test -update):\n%s", golden, y)
	}
	for _, w := range []string{"completions: 3", "completionMode: Indexed", "--tasks\n        - \"3\"", "claimName: traj-runs"} {
		if !strings.Contains(string(y), w) {
			t.Errorf("manifest lacks %q", w)
		}
	}
	if _, err := KubeManifest(Kube{Name: "x", Trees: trees}); err == nil {
		t.Error("a manifest without an image was written")
	}
}

// TestMineSharesEveryTreeOnce: the shares of n tasks cover the list, each
// tree once, sizes differing by one at most.
func TestMineSharesEveryTreeOnce(t *testing.T) {
	var trees []string
	for i := range 11 {
		trees = append(trees, strings.Repeat(string(rune('a'+i)), 40))
	}
	for _, n := range []int{1, 2, 3, 11, 12} {
		var all []string
		lo, hi := len(trees), 0
		for i := range n {
			m, err := Mine(trees, n, i)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, m...)
			lo, hi = min(lo, len(m)), max(hi, len(m))
		}
		slices.Sort(all)
		if !slices.Equal(all, trees) || hi-lo > 1 {
			t.Errorf("%d tasks: shares cover %d trees (want each of %d once), sizes %d..%d", n, len(all), len(trees), lo, hi)
		}
	}
	for _, bad := range [][2]int{{0, 0}, {3, 3}, {3, -1}} {
		if _, err := Mine(trees, bad[0], bad[1]); err == nil {
			t.Errorf("task %d of %d accepted", bad[1], bad[0])
		}
	}
}

// TestFaultHalt: --fault-halt names one task and a tree count; anything
// else is refused, so a misspelt injection cannot pass for no injection.
func TestFaultHalt(t *testing.T) {
	for _, tc := range []struct {
		spec string
		idx  int
		want int
		bad  bool
	}{
		{"", 1, 0, false},
		{"1:1", 1, 1, false},
		{"1:3", 0, 0, false},
		{"0:2", 0, 2, false},
		{"1", 1, 0, true},
		{"1:0", 1, 0, true},
		{"-1:1", 1, 0, true},
		{"a:1", 1, 0, true},
		{"1:x", 1, 0, true},
	} {
		got, err := faultHalt(tc.spec, tc.idx)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("faultHalt(%q, %d) = %d, %v; want %d, error %v", tc.spec, tc.idx, got, err, tc.want, tc.bad)
		}
	}
}
