package gitstate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// commitTrees is `git log --format='%H %T'` of revs in dir.
func commitTrees(t *testing.T, dir string, revs ...string) map[plumbing.Hash]plumbing.Hash {
	t.Helper()
	want := map[plumbing.Hash]plumbing.Hash{}
	for _, line := range strings.Split(strings.TrimSpace(gitRun(t, dir, append([]string{"log", "--format=%H %T"}, revs...)...)), "\n") {
		c, tree, _ := strings.Cut(line, " ")
		want[plumbing.NewHash(c)] = plumbing.NewHash(tree)
	}
	return want
}

// TestBundleCommitTrees: the commits at the head of a bundle's pack are
// every commit of it — in the bundles WriteBundle writes (full and
// incremental) and in git's, whose commits may be deltas of one another —
// each with the tree git gives; a damaged commit never gives a wrong
// tree.
func TestBundleCommitTrees(t *testing.T) {
	ours := populated(t)
	first := plumbing.NewHash(strings.TrimSpace(gitRun(t, ours.GitDir(), "rev-list", "--max-parents=0", "HEAD")))
	cli := cliRepo(t, 40)
	cliBundle := filepath.Join(t.TempDir(), "git.bundle")
	gitRun(t, cli, "bundle", "create", "-q", cliBundle, "--all")
	for _, tt := range []struct {
		name   string
		bundle string
		want   map[plumbing.Hash]plumbing.Hash
	}{
		{"WriteBundle", writeBundleFile(t, ours, BundleOptions{}), commitTrees(t, ours.GitDir(), "--all")},
		{"WriteBundle incremental", writeBundleFile(t, ours, BundleOptions{Prerequisites: []plumbing.Hash{first}}), commitTrees(t, ours.GitDir(), "--all", "^"+first.String())},
		{"git bundle create", cliBundle, commitTrees(t, cli, "--all")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(tt.bundle)
			if err != nil {
				t.Fatal(err)
			}
			got, err := BundleCommitTrees(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("commit → tree:\n%v\nwant (git log):\n%v", got, tt.want)
			}
			// A byte changed anywhere in the first objects: an error, or
			// commits whose trees are git's (a changed commit has
			// another id, which names no commit of the bundle).
			pack := bytes.Index(data, []byte("PACK"))
			for i := pack + 12; i < min(len(data), pack+12+600); i++ {
				bad := bytes.Clone(data)
				bad[i] ^= 0x20
				got, err := BundleCommitTrees(bytes.NewReader(bad))
				if err != nil {
					continue
				}
				for c, tree := range got {
					if want, ok := tt.want[c]; ok && want != tree {
						t.Fatalf("byte %d changed: commit %s → tree %s, want %s", i, c, tree, want)
					}
				}
			}
		})
	}
}
