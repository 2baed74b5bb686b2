package evalbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
)

// artifactTree is a tree whose build.sh is build, plus a notes file
// (what trees that share a compiler differ by).
func artifactTree(t *testing.T, build, notes string) string {
	t.Helper()
	dir := tree(t, build)
	if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func artifactEvaluator(t *testing.T, cache replay.Cache) *evalbox.Evaluator {
	t.Helper()
	needBwrap(t)
	ev := evaluator(t, sandbox.ProviderBwrap, "")
	ev.Artifacts = []string{"cc"}
	ev.Cache = cache
	ev.EnvVersion = evaluation.Version(ev.Env.Version(), evaluation.Settings{Artifacts: ev.Artifacts})
	return ev
}

func evaluate(t *testing.T, ev *evalbox.Evaluator, dir string) replay.Result {
	t.Helper()
	res, err := ev.Evaluate(context.Background(), dir, []string{"basics/smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Key == nil {
		t.Fatal("an evaluation with artifacts says nothing of its key")
	}
	return res
}

// Trees that build the same ./cc share one evaluation: the second is
// built and served from the artifacts' entry, with the same score; a
// tree whose ./cc differs is tested.
func TestArtifactKeyServesSameBuild(t *testing.T) {
	cache := &replay.MemCache{}
	ev := artifactEvaluator(t, cache)
	first := evaluate(t, ev, artifactTree(t, gccBuild, "plan A"))
	if first.Key.Key != replay.KeyArtifact || first.Key.Cached || first.Key.Artifact == "" {
		t.Fatalf("first tree: key %+v, want a new artifact key", first.Key)
	}
	p, _, total := first.Totals()
	if p == 0 || p != total {
		t.Fatalf("the gcc wrapper passed %d of %d", p, total)
	}
	second := evaluate(t, ev, artifactTree(t, gccBuild, "plan B, other notes"))
	if second.Key.Key != replay.KeyArtifact || !second.Key.Cached || second.Key.Artifact != first.Key.Artifact {
		t.Fatalf("second tree: key %+v, want the first's artifacts from the cache", second.Key)
	}
	if sp, _, st := second.Totals(); sp != p || st != total {
		t.Fatalf("second tree scored %d/%d, first %d/%d", sp, st, p, total)
	}
	// Another compiler (one more line in ./cc): tested, its own key.
	other := evaluate(t, ev, artifactTree(t, strings.Replace(gccBuild, "exec gcc", "true\\nexec gcc", 1), "plan A"))
	if other.Key.Cached || other.Key.Artifact == first.Key.Artifact || other.Key.Key != replay.KeyArtifact {
		t.Fatalf("another ./cc: key %+v (first %s)", other.Key, first.Key.Artifact)
	}
}

// A build that stamps something new each time is caught by the second
// build: its result is kept under the tree's key, never the artifacts'.
func TestArtifactKeyNotReproducible(t *testing.T) {
	cache := &replay.MemCache{}
	ev := artifactEvaluator(t, cache)
	build := gccBuild + "echo \"# $(cat /proc/sys/kernel/random/uuid)\" >> cc\n"
	res := evaluate(t, ev, artifactTree(t, build, ""))
	if res.Key.Key != replay.KeyTree || !strings.Contains(res.Key.Why, "not reproducible") {
		t.Fatalf("key %+v, want the tree's: not reproducible", res.Key)
	}
	if p, _, total := res.Totals(); p != total || total == 0 {
		t.Fatalf("the stamped gcc wrapper passed %d of %d", p, total)
	}
	ak := evaluation.ArtifactCacheKey(res.Key.Artifact, ev.Version(), []string{"basics/smoke"})
	if _, ok, _ := cache.Get(context.Background(), ak); ok {
		t.Fatal("a result of a build that is not reproducible was kept under its artifacts")
	}
}

// Each compile is shown ./cc alone: a ./cc that reads the rest of the
// repository at run time fails every case, in ground truth and run_tests
// alike (EvaluateDetailed), whatever the key.
func TestCompileSeesOnlyArtifacts(t *testing.T) {
	ev := artifactEvaluator(t, &replay.MemCache{})
	build := "printf '#!/bin/sh\\n. /workspace/helper.sh\\nexec gcc -w \"$@\"\\n' > cc && chmod +x cc\n" +
		"printf 'true\\n' > helper.sh\n"
	dir := artifactTree(t, build, "")
	runs := run(t, ev, dir, "basics/smoke")
	if runs[0].Passed != 0 {
		t.Fatalf("a ./cc that reads helper.sh beside it passed %d cases: the compile saw more than ./cc", runs[0].Passed)
	}
	for _, c := range runs[0].Cases {
		if c.Phase != "compile" {
			t.Fatalf("case %s failed at %s, want compile", c.Name, c.Phase)
		}
	}
}

// The build is untrusted: an artifact that is a link to a host file is
// copied as a link, never the file's bytes; an artifact reached through
// a link out of the tree is not read at all.
func TestCollectArtifactsStaysInTree(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		artifacts []string
		make      func(dir string) error
	}{
		{"link to a host file", []string{"cc"}, func(dir string) error { return os.Symlink(secret, filepath.Join(dir, "cc")) }},
		{"folder linked out of the tree", []string{"out/cc"}, func(dir string) error { return os.Symlink(filepath.Dir(secret), filepath.Join(dir, "out")) }},
		{"link inside a declared folder", []string{"rt/"}, func(dir string) error {
			if err := os.Mkdir(filepath.Join(dir, "rt"), 0o755); err != nil {
				return err
			}
			return os.Symlink(secret, filepath.Join(dir, "rt", "lib"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, dst := t.TempDir(), filepath.Join(t.TempDir(), "a")
			if err := tc.make(tree); err != nil {
				t.Fatal(err)
			}
			if _, err := evalbox.CollectArtifactsForTest(tree, dst, tc.artifacts); err != nil {
				t.Fatal(err)
			}
			filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					data, _ := os.ReadFile(p)
					if strings.Contains(string(data), "host secret") {
						t.Errorf("%s holds the host file's bytes", p)
					}
				}
				return nil
			})
		})
	}
}

// The digest covers names, the executable bit and bytes, and marks a
// missing artifact; the same files give the same digest.
func TestArtifactDigest(t *testing.T) {
	write := func(files map[string]string, mode os.FileMode) string {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(body), mode); err != nil {
				t.Fatal(err)
			}
		}
		d, err := evalbox.CollectArtifactsForTest(dir, filepath.Join(t.TempDir(), "a"), []string{"cc", "rt/"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := write(map[string]string{"cc": "x", "rt/a": "1"}, 0o755)
	for _, tc := range []struct {
		name  string
		files map[string]string
		mode  os.FileMode
		same  bool
	}{
		{"same files", map[string]string{"cc": "x", "rt/a": "1"}, 0o755, true},
		{"other notes beside", map[string]string{"cc": "x", "rt/a": "1", "NOTES.md": "y"}, 0o755, true},
		{"other bytes", map[string]string{"cc": "y", "rt/a": "1"}, 0o755, false},
		{"not executable", map[string]string{"cc": "x", "rt/a": "1"}, 0o644, false},
		{"runtime file renamed", map[string]string{"cc": "x", "rt/b": "1"}, 0o755, false},
		{"runtime folder missing", map[string]string{"cc": "x"}, 0o755, false},
	} {
		if got := write(tc.files, tc.mode); (got == base) != tc.same {
			t.Errorf("%s: digest equal to the base: %v, want %v", tc.name, got == base, tc.same)
		}
	}
}

func TestVersionMarks(t *testing.T) {
	for _, tc := range []struct {
		artifacts []string
		deny      bool
	}{{nil, false}, {nil, true}, {[]string{"cc"}, false}, {[]string{"cc", "rt/"}, true}} {
		v := evaluation.Version("env1", evaluation.Settings{Artifacts: tc.artifacts, DenyCCompiler: tc.deny})
		// An Evaluator's version adds its provider; both read back alike.
		ev := (&evalbox.Evaluator{EnvVersion: v, Provider: sandbox.ProviderBwrap}).Version()
		for _, v := range []string{v, ev} {
			got := evaluation.ParseVersion(v)
			a, d := got.Artifacts, got.DenyCCompiler
			if strings.Join(a, ",") != strings.Join(tc.artifacts, ",") || d != tc.deny {
				t.Errorf("%q read back as %v %v", v, a, d)
			}
		}
	}
	if v := evaluation.Version("env1", evaluation.Settings{DenyCCompiler: true}); v != "env1"+evaluation.DenyCCompilerVersion {
		t.Errorf("deny alone: %q, want the mark traces recorded before artifacts", v)
	}
}
