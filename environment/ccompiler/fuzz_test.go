package ccompiler

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseTestPath: whatever the input, an accepted path never escapes the
// fixtures root and round-trips to itself.
func FuzzParseTestPath(f *testing.F) {
	for _, s := range []string{
		"all", "basics", "basics/smoke", "wacct/chapter_1", "c_testsuite/part_2", "torture/part_10",
		"../x", "/etc", "basics/../../etc", "basics\\..\\x", "wacct/chapter_0", "wacct/chapter_01",
		"torture/part_", "a\x00b", "basics/", "/", "", "basics//smoke", "all/x", ".", "basics/.",
	} {
		f.Add(s)
	}
	root := filepath.Join(string(filepath.Separator), "fixtures")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseTestPath(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("%q parsed to %q", s, p.String())
		}
		if strings.Contains(s, "..") || strings.HasPrefix(s, "/") || strings.ContainsAny(s, "\\\x00.") {
			t.Fatalf("accepted an escaping path %q", s)
		}
		j := filepath.Join(root, s)
		if !strings.HasPrefix(j, root+string(filepath.Separator)) {
			t.Fatalf("%q joins to %q outside %q", s, j, root)
		}
	})
}
