package gitstate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/trace"
)

// genWorkspace writes a workspace shaped like the agent's Rust project:
// sources files of about size bytes each in nested folders, a .gitignore,
// and a git-ignored target/ with targetFiles small build outputs.
func genWorkspace(tb testing.TB, dir string, sources, size, targetFiles int) []string {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	writeFile(tb, dir, ".gitignore", "/target\n*.swp\n", 0o644)
	var paths []string
	for i := 0; i < sources; i++ {
		p := fmt.Sprintf("src/mod%02d/sub%d/file%05d.rs", i%12, (i/12)%25, i)
		paths = append(paths, p)
		writeFile(tb, dir, p, sourceText(rng, size), 0o644)
	}
	for i := 0; i < targetFiles; i++ {
		p := filepath.Join(dir, "target", "debug", fmt.Sprintf("deps%02d", i%100), fmt.Sprintf("obj%05d.o", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte("object code\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return paths
}

func sourceText(rng *rand.Rand, size int) string {
	words := []string{"fn", "let", "mut", "match", "token", "parse", "expr", "emit", "return", "Some", "None", "=>", "{", "}", ";"}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(8) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
	}
	return b.String()
}

// BenchmarkCheckpoint compares a checkpoint after a one-file change with
// the git CLI's `git add -A && git commit` on the same workspace, at 300,
// 3,000 and 30,000 source files (~10 KB each at 300, ~1 KB above) beside an
// excluded target/ of 30,000 build outputs. Target: faster than the git
// CLI at every size (work proportional to what changed).
func BenchmarkCheckpoint(b *testing.B) {
	for _, n := range []int{300, 3_000, 30_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			size := 10_000
			if n > 300 {
				size = 1_000
			}
			benchCheckpoint(b, n, size, 30_000)
		})
	}
}

func benchCheckpoint(b *testing.B, sources, size, targetFiles int) {
	ctx := context.Background()
	repo := initIn(b, b.TempDir(), Options{Capture: trace.CaptureRules{Exclude: []string{"/target/", "*.swp"}}})
	goDir := repo.Dir()
	paths := genWorkspace(b, goDir, sources, size, targetFiles)
	if _, err := repo.Checkpoint(ctx, 1); err != nil {
		b.Fatal(err)
	}

	cliDir := b.TempDir()
	genWorkspace(b, cliDir, sources, size, targetFiles)
	gitRun(b, cliDir, "init", "-q", "-b", "main")
	// No automatic gc: after the first commit of 30,000 files git would
	// pack them in a background process that runs into the measurements
	// (our checkpoints keep loose objects too).
	gitRun(b, cliDir, "config", "gc.auto", "0")
	gitRun(b, cliDir, "add", "-A")
	gitRun(b, cliDir, "commit", "-q", "-m", "part 1 checkpoint")
	// The set-up wrote ~60,000 files at the larger sizes: flush them, so
	// their writeback does not land on whichever side runs first.
	syscall.Sync()

	// edits counts across the framework's repeated runs so every edit is new.
	edits := 0
	edit := func(b *testing.B, dir string, i int) {
		edits++
		p := paths[(i*7919)%len(paths)]
		writeFile(b, dir, p, fmt.Sprintf("// edit %d\n", edits)+strings.Repeat("x", size/2), 0o644)
	}
	b.Run("traj", func(b *testing.B) {
		hashed := 0
		for i := 0; i < b.N; i++ {
			edit(b, goDir, i)
			cp, err := repo.Checkpoint(ctx, i+2)
			if err != nil {
				b.Fatal(err)
			}
			if !cp.Committed {
				b.Fatal("change not committed")
			}
			hashed += repo.hashed
		}
		// Files read and hashed a checkpoint: 1 when the stat cache works
		// (more: racily clean entries, git's rule, hashed again).
		b.ReportMetric(float64(hashed)/float64(b.N), "hashed/op")
	})
	// Where a checkpoint's time goes: the walk alone (read every folder,
	// lstat every file: the floor any checkpoint pays, git's too), and
	// the scan (walk, stat compare with the index, hash the changed
	// file, build the trees); the rest of "traj" writes the objects, the
	// ref and the index.
	b.Run("walk", func(b *testing.B) {
		ws, err := openWorkspace(repo.Dir())
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		for b.Loop() {
			n := 0
			if err := repo.walk(ctx, ws, func(walkFile) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
			if n != sources+1 {
				b.Fatalf("walked %d files, want %d", n, sources+1)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			edit(b, goDir, i)
			if _, err := repo.scan(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gitcli", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			edit(b, cliDir, i)
			gitRun(b, cliDir, "add", "-A")
			gitRun(b, cliDir, "commit", "-q", "-m", fmt.Sprintf("part %d checkpoint", i+2))
		}
	})
}

// BenchmarkFullBundle compares repo.bundle of 501 checkpoint commits (a
// 300-file workspace, one file edited per part) with `git bundle create
// --all` of the same git directory: bytes and time (targets: within 1.2x
// of git's size and 2x of its time).
func BenchmarkFullBundle(b *testing.B) {
	ctx := context.Background()
	r := initIn(b, b.TempDir(), Options{})
	paths := genWorkspace(b, r.Dir(), 300, 10_000, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	mustCheckpoint(b, r, 1)
	for p := 2; p <= 500; p++ {
		path := paths[rng.IntN(len(paths))]
		data, err := os.ReadFile(filepath.Join(r.Dir(), path))
		if err != nil {
			b.Fatal(err)
		}
		at := rng.IntN(len(data))
		writeFile(b, r.Dir(), path, string(data[:at])+fmt.Sprintf("edit %d\n", p)+string(data[at:]), 0o644)
		mustCheckpoint(b, r, p)
	}
	out := filepath.Join(b.TempDir(), "bundles")
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	var ours, theirs time.Duration
	var ourSize, theirSize int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := filepath.Join(out, fmt.Sprintf("traj-%d.bundle", i))
		start := time.Now()
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.WriteBundle(ctx, f, BundleOptions{}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		ours += time.Since(start)
		fi, _ := os.Stat(p)
		ourSize = fi.Size()
		g := filepath.Join(out, fmt.Sprintf("git-%d.bundle", i))
		start = time.Now()
		gitRun(b, out, "--git-dir="+r.GitDir(), "bundle", "create", "-q", g, "--all")
		theirs += time.Since(start)
		fi, _ = os.Stat(g)
		theirSize = fi.Size()
	}
	b.ReportMetric(float64(ourSize), "traj-bytes")
	b.ReportMetric(float64(theirSize), "git-bytes")
	b.ReportMetric(float64(ourSize)/float64(theirSize), "size-traj/git")
	b.ReportMetric(float64(ours)/float64(theirs), "time-traj/git")
}
