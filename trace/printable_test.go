package trace_test

import (
	"os/exec"
	"testing"

	"github.com/trajlab/traj/trace"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"héllo 世界", "héllo 世界"},
		{"\x1b[2J\x1b]0;owned\x07", `\x1b[2J\x1b]0;owned\a`},
		{"line\nfake: ok\r", `line\nfake: ok\r`},
		{"tab\there", `tab\there`},
		{"abc\u202edcba", `abc\u202edcba`},
		{"\u009b31m", `\u009b31m`},
		{"bad \xff byte", `bad \xff byte`},
		{`back\slash` + "\x1b", `back\\slash\x1b`},
		{`back\slash`, `back\slash`},
		{"\u2028", `\u2028`},
	} {
		if got := trace.Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestShellWord: what a shell reads back from ShellWord(s) is s, for the
// words traj's hints print (store URLs with & and ?, ids with ; $ ' and
// spaces in folders); plain words stay unquoted.
func TestShellWord(t *testing.T) {
	words := []string{
		"s3://bucket/traj?endpoint=http://127.0.0.1:7070&region=us-east-1",
		"demo-20261125T101010-ab12", "/my store", "it's", "a;rm -rf x", "$HOME", "`id`", "*", "x?", "ünï", "a\\b", "",
	}
	for _, w := range words {
		out, err := exec.Command("sh", "-c", `printf '%s' `+trace.ShellWord(w)).Output()
		if err != nil {
			t.Fatalf("%q: %v", w, err)
		}
		if string(out) != w {
			t.Errorf("ShellWord(%q) = %s: the shell reads %q", w, trace.ShellWord(w), out)
		}
	}
	if got := trace.ShellWord("demo-1.2_x"); got != "demo-1.2_x" {
		t.Errorf("a plain word was quoted: %s", got)
	}
}
