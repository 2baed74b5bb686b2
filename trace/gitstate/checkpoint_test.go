package gitstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/trajlab/traj/trace"
)

func newRepo(t *testing.T) *Repo {
	t.Helper()
	return newRepoWith(t, trace.CaptureRules{})
}

func newRepoWith(t *testing.T, rules trace.CaptureRules) *Repo {
	t.Helper()
	return initIn(t, t.TempDir(), Options{Now: fixedClock(), Capture: rules})
}

// lsTree maps path to "mode type" of HEAD's tree, read by the git CLI.
func lsTree(t *testing.T, r *Repo) map[string]string {
	t.Helper()
	out := rgit(t, r, "ls-tree", "-r", "HEAD")
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		meta, name, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		m[name] = f[0] + " " + f[1]
	}
	return m
}

func TestInit(t *testing.T) {
	r := newRepo(t)
	if got := strings.TrimSpace(rgit(t, r, "symbolic-ref", "HEAD")); got != "refs/heads/main" {
		t.Fatalf("HEAD -> %q, want refs/heads/main", got)
	}
	if got := strings.TrimSpace(rgit(t, r, "log", "--format=%an <%ae> %ad %s", "--date=iso-strict")); got != "traj <traj@localhost> 2026-11-21T12:00:01+00:00 initial empty commit" {
		t.Fatalf("initial commit: %q", got)
	}
	if got := rgit(t, r, "status", "--porcelain"); got != "" {
		t.Fatalf("status not clean: %q", got)
	}
	if _, err := Init(context.Background(), r.GitDir(), r.Dir(), Options{}); !errors.Is(err, ErrAlreadyRepository) {
		t.Fatalf("second Init: %v, want ErrAlreadyRepository", err)
	}
	if _, err := Open(context.Background(), t.TempDir(), t.TempDir(), Options{}); !errors.Is(err, ErrNotRepository) {
		t.Fatalf("Open of a plain folder: %v, want ErrNotRepository", err)
	}
}

func TestCheckpoint(t *testing.T) {
	type want struct {
		committed bool
		changed   []string
		tree      map[string]string // path -> "mode type"; nil: not checked
	}
	tests := []struct {
		name  string
		rules trace.CaptureRules
		setup func(t *testing.T, dir string) // before the first checkpoint
		edit  func(t *testing.T, dir string) // between the first and second
		want  want
	}{
		{
			name: "add",
			edit: func(t *testing.T, dir string) {
				writeFile(t, dir, "src/main.rs", "fn main() {}\n", 0o644)
				writeFile(t, dir, "README", "hi\n", 0o644)
			},
			want: want{true, []string{"README", "src/main.rs"}, map[string]string{
				"README": "100644 blob", "src/main.rs": "100644 blob",
			}},
		},
		{
			name:  "modify",
			setup: func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "one\n", 0o644) },
			edit:  func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "two\n", 0o644) },
			want:  want{true, []string{"a.txt"}, map[string]string{"a.txt": "100644 blob"}},
		},
		{
			name: "delete",
			setup: func(t *testing.T, dir string) {
				writeFile(t, dir, "a.txt", "one\n", 0o644)
				writeFile(t, dir, "d/b.txt", "b\n", 0o644)
			},
			edit: func(t *testing.T, dir string) {
				if err := os.RemoveAll(filepath.Join(dir, "d")); err != nil {
					t.Fatal(err)
				}
			},
			want: want{true, []string{"d/b.txt"}, map[string]string{"a.txt": "100644 blob"}},
		},
		{
			name:  "rename is delete plus add",
			setup: func(t *testing.T, dir string) { writeFile(t, dir, "old.c", "int x;\n", 0o644) },
			edit: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(dir, "old.c"), filepath.Join(dir, "lib/new.c")); err != nil {
					t.Fatal(err)
				}
			},
			want: want{true, []string{"lib/new.c", "old.c"}, map[string]string{"lib/new.c": "100644 blob"}},
		},
		{
			name: "binary file",
			edit: func(t *testing.T, dir string) {
				writeFile(t, dir, "bin/blob.dat", "\x00\xff\x00binary\x00\n\r\x01", 0o644)
			},
			want: want{true, []string{"bin/blob.dat"}, map[string]string{"bin/blob.dat": "100644 blob"}},
		},
		{
			name:  "exec bit set",
			setup: func(t *testing.T, dir string) { writeFile(t, dir, "run.sh", "#!/bin/sh\n", 0o644) },
			edit: func(t *testing.T, dir string) {
				if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: want{true, []string{"run.sh"}, map[string]string{"run.sh": "100755 blob"}},
		},
		{
			name: "symlink",
			edit: func(t *testing.T, dir string) {
				writeFile(t, dir, "target.txt", "t\n", 0o644)
				if err := os.Symlink("target.txt", filepath.Join(dir, "link")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/nonexistent/dir", filepath.Join(dir, "dangling")); err != nil {
					t.Fatal(err)
				}
			},
			want: want{true, []string{"dangling", "link", "target.txt"}, map[string]string{
				"dangling": "120000 blob", "link": "120000 blob", "target.txt": "100644 blob",
			}},
		},
		{
			name: "empty directories ignored",
			edit: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "empty/deeper"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: want{false, []string{}, map[string]string{}},
		},
		{
			name:  "nothing changed",
			setup: func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "one\n", 0o644) },
			edit:  func(t *testing.T, dir string) {},
			want:  want{false, []string{}, map[string]string{"a.txt": "100644 blob"}},
		},
		{
			name:  "touched but unchanged",
			setup: func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "one\n", 0o644) },
			edit:  func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "one\n", 0o644) },
			want:  want{false, []string{}, map[string]string{"a.txt": "100644 blob"}},
		},
		{
			name: "the agent's gitignore hides nothing",
			setup: func(t *testing.T, dir string) {
				writeFile(t, dir, ".gitignore", "gen/\n*.c\n", 0o644)
			},
			edit: func(t *testing.T, dir string) {
				writeFile(t, dir, "gen/table.c", "int t;\n", 0o644)
				writeFile(t, dir, "main.c", "int main;\n", 0o644)
			},
			want: want{true, []string{"gen/table.c", "main.c"}, map[string]string{
				".gitignore": "100644 blob", "gen/table.c": "100644 blob", "main.c": "100644 blob",
			}},
		},
		{
			name: "capture excludes, gitignore forms",
			rules: trace.CaptureRules{Exclude: []string{
				"# comment", "target/", "*.log", "!keep.log", "/rootonly.txt", "**/gen/**", "docs/*.tmp", "",
				"secret.env", "local.txt", "!sub/b.log",
			}},
			setup: func(t *testing.T, dir string) {
				writeFile(t, dir, ".gitignore", "keep.log\n", 0o644)
				writeFile(t, dir, ".git/info/exclude", "keep.log\n", 0o644)
			},
			edit: func(t *testing.T, dir string) {
				for _, p := range []string{
					"target/debug/app", "crate/target/x.o", "a.log", "sub/b.log", "keep.log",
					"rootonly.txt", "sub/rootonly.txt", "x/gen/y/z.rs", "docs/a.tmp", "docs/sub/b.tmp",
					"secret.env", "sub/secret.env", "target.txt",
				} {
					writeFile(t, dir, p, p+"\n", 0o644)
				}
				writeFile(t, dir, "sub/.gitignore", "b.log\n", 0o644)
				writeFile(t, dir, "sub/local.txt", "l\n", 0o644)
				writeFile(t, dir, "local.txt", "root local\n", 0o644)
			},
			want: want{true, nil, map[string]string{
				".gitignore": "100644 blob", "keep.log": "100644 blob", "sub/rootonly.txt": "100644 blob",
				"docs/sub/b.tmp": "100644 blob", "target.txt": "100644 blob", "sub/.gitignore": "100644 blob",
				"sub/b.log": "100644 blob",
			}},
		},
		{
			name: "nested git repository recorded as files",
			edit: func(t *testing.T, dir string) {
				sub := filepath.Join(dir, "hello")
				writeFile(t, dir, "hello/src/main.rs", "fn main() {}\n", 0o644)
				writeFile(t, dir, "hello/.gitignore", "/target\n", 0o644)
				writeFile(t, dir, "hello/target/debug/hello", "elf", 0o755)
				gitRun(t, sub, "init", "-q")
				gitRun(t, sub, "add", "-A")
				gitRun(t, sub, "commit", "-q", "-m", "nested")
			},
			want: want{true, []string{"hello/.gitignore", "hello/src/main.rs", "hello/target/debug/hello"}, map[string]string{
				"hello/.gitignore": "100644 blob", "hello/src/main.rs": "100644 blob", "hello/target/debug/hello": "100755 blob",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRepoWith(t, tt.rules)
			dir := r.Dir()
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			first, err := r.Checkpoint(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(t, dir)
			got, err := r.Checkpoint(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if got.CommitBefore != first.CommitAfter {
				t.Errorf("commit_before %s, want previous commit_after %s", got.CommitBefore, first.CommitAfter)
			}
			if got.Committed != tt.want.committed {
				t.Errorf("committed = %v, want %v", got.Committed, tt.want.committed)
			}
			if tt.want.changed != nil && !reflect.DeepEqual(got.ChangedFiles, tt.want.changed) {
				t.Errorf("changed_files = %q, want %q", got.ChangedFiles, tt.want.changed)
			}
			head := strings.TrimSpace(rgit(t, r, "rev-parse", "HEAD"))
			if head != got.CommitAfter {
				t.Errorf("git HEAD %s, commit_after %s", head, got.CommitAfter)
			}
			if !got.Committed && got.CommitAfter != got.CommitBefore {
				t.Errorf("not committed but commit_after %s != commit_before %s", got.CommitAfter, got.CommitBefore)
			}
			if got.Committed {
				if msg := strings.TrimSpace(rgit(t, r, "log", "-1", "--format=%s|%an <%ae>")); msg != "part 2 checkpoint|traj <traj@localhost>" {
					t.Errorf("commit subject/author %q", msg)
				}
				stat := rgit(t, r, "show", "--stat", "--format=", "HEAD")
				for _, f := range got.ChangedFiles {
					if !strings.Contains(stat, filepath.Base(f)) {
						t.Errorf("git show --stat lacks %s:\n%s", f, stat)
					}
				}
			}
			if tt.want.tree != nil {
				if tree := lsTree(t, r); !reflect.DeepEqual(tree, tt.want.tree) {
					t.Errorf("ls-tree = %v\nwant %v", tree, tt.want.tree)
				}
			}
			if st := rgit(t, r, "status", "--porcelain"); st != "" {
				t.Errorf("git status not clean after checkpoint:\n%s", st)
			}
			rgit(t, r, "fsck", "--strict", "--no-progress")
		})
	}
}

func TestCheckpointRacyFile(t *testing.T) {
	// A file rewritten with the same size right after a checkpoint, within
	// the filesystem's timestamp granularity, must still be seen.
	ctx := context.Background()
	r := newRepo(t)
	writeFile(t, r.Dir(), "a.txt", "aaaa\n", 0o644)
	if _, err := r.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i, c := range []string{"bbbb\n", "cccc\n", "dddd\n"} {
		p := filepath.Join(r.Dir(), "a.txt")
		fi, _ := os.Stat(p)
		writeFile(t, r.Dir(), "a.txt", c, 0o644)
		// Same size, and force the same mtime: only racy handling catches it.
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		cp, err := r.Checkpoint(ctx, i+2)
		if err != nil {
			t.Fatal(err)
		}
		if !cp.Committed {
			t.Fatalf("rewrite %d with same size and mtime not committed", i)
		}
	}
}

func TestCheckpointCancelled(t *testing.T) {
	r := newRepo(t)
	writeFile(t, r.Dir(), "a.txt", "a\n", 0o644)
	before, _ := r.Head()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Checkpoint(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Checkpoint with cancelled context: %v", err)
	}
	if after, _ := r.Head(); after != before {
		t.Fatalf("HEAD moved to %s on a cancelled checkpoint", after)
	}
}

func TestCheckpointSequence(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	var last trace.RepoCheckpoint
	for i := 1; i <= 5; i++ {
		writeFile(t, r.Dir(), "f.txt", strings.Repeat("x", i), 0o644)
		cp, err := r.Checkpoint(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		if i > 1 && cp.CommitBefore != last.CommitAfter {
			t.Fatalf("part %d: commit_before %s != previous %s", i, cp.CommitBefore, last.CommitAfter)
		}
		last = cp
	}
	if n := strings.Count(rgit(t, r, "log", "--format=%s"), "checkpoint"); n != 5 {
		t.Fatalf("%d checkpoint commits, want 5", n)
	}
}

func TestCheckpointHashesOnlyChangedFiles(t *testing.T) {
	ctx := context.Background()
	r := newRepoWith(t, trace.CaptureRules{Exclude: []string{"/target/"}})
	for i := 0; i < 20; i++ {
		writeFile(t, r.Dir(), filepath.Join("src", string(rune('a'+i))+".rs"), strings.Repeat("x", i+1), 0o644)
	}
	writeFile(t, r.Dir(), "target/debug/big.o", "excluded", 0o644)
	if _, err := r.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if r.hashed != 20 {
		t.Fatalf("first checkpoint hashed %d files, want 20 (excluded target/ never read)", r.hashed)
	}
	// Let the index become older than every file so nothing is racily clean.
	past := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(r.Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/.git/") {
			return err
		}
		return os.Chtimes(p, past, past)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{20, 0, 0} { // stat changed by Chtimes, then clean
		cp, err := r.Checkpoint(ctx, 2+i)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Committed || r.hashed != want {
			t.Fatalf("round %d: committed=%v hashed=%d, want no commit and %d hashed", i, cp.Committed, r.hashed, want)
		}
	}
	writeFile(t, r.Dir(), "src/a.rs", "changed", 0o644)
	if cp, err := r.Checkpoint(ctx, 5); err != nil || !cp.Committed || r.hashed != 1 {
		t.Fatalf("one edit: %v committed=%v hashed=%d, want 1", err, cp.Committed, r.hashed)
	}
}

func TestStatCleanRacyRule(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f", "data", 0o644)
	fi, err := lstat(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	var e index.Entry
	statEntry(&e, fi, filemode.Regular)
	tests := []struct {
		name       string
		indexMtime time.Time
		want       bool
	}{
		{"index written later", fi.mtime.Add(time.Millisecond), true},
		{"index in the same tick", fi.mtime, false},
		{"index older than file", fi.mtime.Add(-time.Second), false},
	}
	for _, tt := range tests {
		li := loadedIndex{mtime: tt.indexMtime}
		if got := li.statClean(&e, fi, filemode.Regular); got != tt.want {
			t.Errorf("%s: statClean = %v, want %v", tt.name, got, tt.want)
		}
	}
	li := loadedIndex{mtime: fi.mtime.Add(time.Second)}
	if li.statClean(&e, fi, filemode.Executable) {
		t.Error("mode change not detected")
	}
	changed := e
	changed.Size++
	if li.statClean(&changed, fi, filemode.Regular) {
		t.Error("size change not detected")
	}
}

// TestSnapshot: a snapshot is the tree the next checkpoint commits, and it
// moves nothing (HEAD, the next checkpoint's changed files); ExportTree
// writes exactly those files.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	r := newRepoWith(t, trace.CaptureRules{Exclude: []string{"/target/"}})
	writeFile(t, r.Dir(), "a.c", "int main(void){return 0;}\n", 0o644)
	writeFile(t, r.Dir(), "build.sh", "#!/bin/sh\n", 0o755)
	writeFile(t, r.Dir(), "target/out.o", "binary", 0o644)
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := r.Head(); h != head {
		t.Fatalf("Snapshot moved HEAD: %s -> %s", head, h)
	}
	cp, err := r.Checkpoint(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !cp.Committed || !reflect.DeepEqual(cp.ChangedFiles, []string{"a.c", "build.sh"}) {
		t.Fatalf("checkpoint after snapshot: %+v", cp)
	}
	if got := strings.TrimSpace(rgit(t, r, "rev-parse", "HEAD^{tree}")); got != tree {
		t.Fatalf("snapshot tree %s, checkpoint tree %s", tree, got)
	}
	dest := filepath.Join(t.TempDir(), "tree")
	if err := r.ExportTree(ctx, tree, dest); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dest, p)
			files = append(files, rel)
		}
		return nil
	})
	if !reflect.DeepEqual(files, []string{"a.c", "build.sh"}) {
		t.Fatalf("exported files %v", files)
	}
	if st, err := os.Stat(filepath.Join(dest, "build.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("build.sh not executable after export: %v %v", st, err)
	}
	if err := r.ExportTree(ctx, strings.Repeat("ab", 20), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatal("ExportTree of an unknown tree succeeded")
	}
}

// TestSnapshotBeforeCheckpoint: files written after the last checkpoint
// (one in a new folder) are in the snapshot's tree, and a second handle on
// the history (the one ground truth and run_tests export from) exports it
// before any checkpoint commits it.
func TestSnapshotBeforeCheckpoint(t *testing.T) {
	ctx := context.Background()
	r := newRepoWith(t, trace.CaptureRules{})
	writeFile(t, r.Dir(), "a.c", "int a;\n", 0o644)
	if _, err := r.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	reader, err := Open(ctx, r.GitDir(), r.Dir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, r.Dir(), "a.c", "int a = 1;\n", 0o644)
	writeFile(t, r.Dir(), "src/new/b.c", "int b;\n", 0o644)
	tree, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "tree")
	if err := reader.ExportTree(ctx, tree, dest); err != nil {
		t.Fatalf("export a snapshot not yet checkpointed: %v", err)
	}
	for name, want := range map[string]string{"a.c": "int a = 1;\n", "src/new/b.c": "int b;\n"} {
		if b, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if again, err := r.Snapshot(ctx); err != nil || again != tree {
		t.Errorf("a second snapshot of the same files: %s, %v; want %s", again, err, tree)
	}
}
