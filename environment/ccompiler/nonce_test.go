package ccompiler

import (
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
)

func TestWithNonce(t *testing.T) {
	const k = 100
	tests := []struct {
		name, src, want string
		hasMain         bool
		wantErr         bool
	}{
		{name: "literal folds", hasMain: true,
			src:  "int main(void) {\n    return 2;\n}\n",
			want: "int main(void) {\n    return 102;\n}\n"},
		{name: "literal wraps mod 256", hasMain: true,
			src:  "int main(void) { return 200; }",
			want: "int main(void) { return 44; }"},
		{name: "expression", hasMain: true,
			src:  "int main(void) { int x = 3; return x * (2 + 1); }",
			want: "int main(void) { int x = 3; return (x * (2 + 1)) + 100; }"},
		{name: "falls off its end", hasMain: true,
			src:  "int main() { f(); }",
			want: "int main() { f(); return 100;\n}"},
		{name: "last statement an if", hasMain: true,
			src:  "int main() { if (a) return 1; }",
			want: "int main() { if (a) return 101; return 100;\n}"},
		{name: "exit calls anywhere, declarations kept", hasMain: true,
			src:  "extern void exit (int);\nvoid f (void) { exit (0); }\nint main () { f (); exit (n + 1); }",
			want: "extern void exit (int);\nvoid f (void) { exit (100); }\nint main () { f (); exit ((n + 1) + 100); return 100;\n}"},
		{name: "other functions' returns untouched", hasMain: true,
			src:  "int g(void) { return 0; }\nint main(void) { return g(); }",
			want: "int g(void) { return 0; }\nint main(void) { return (g()) + 100; }"},
		{name: "comments, strings, chars, preprocessor untouched", hasMain: true,
			src:  "#define R return 0;\n/* return 1; exit(0) */\nint main(void) { puts(\"return 0; exit(0)\"); char c = ';'; // return 3;\n return c; }",
			want: "#define R return 0;\n/* return 1; exit(0) */\nint main(void) { puts(\"return 0; exit(0)\"); char c = ';'; // return 3;\n return (c) + 100; }"},
		{name: "nested function's return is its own", hasMain: true,
			src:  "int main () { int sq (int x) { return x * x; } if (sq (2) != 4) abort (); return 0; }",
			want: "int main () { int sq (int x) { return x * x; } if (sq (2) != 4) abort (); return 100; }"},
		{name: "K&R main", hasMain: true,
			src:  "main (argc, argv) int argc; char **argv; { exit (0); }",
			want: "main (argc, argv) int argc; char **argv; { exit (100); return 100;\n}"},
		{name: "prototype of main is not its body", hasMain: true,
			src:  "int main(void);\nint main(void) { return 0x10; }",
			want: "int main(void);\nint main(void) { return 116; }"},
		{name: "member exit is not a call of exit", hasMain: true,
			src:  "int main(void) { s.exit(1); p->exit(2); return 0; }",
			want: "int main(void) { s.exit(1); p->exit(2); return 100; }"},
		{name: "no main: only exit calls", hasMain: false,
			src:  "int lib(void) { return 1; }",
			want: "int lib(void) { return 1; }"},
		{name: "return without a value", hasMain: true, wantErr: true,
			src: "int main(void) { return; }"},
		{name: "a prefixed character literal is one token", hasMain: true,
			src:  "main() {\n\treturn L'\\0';\n}\nvoid f() { exit (L'1' != L'1'); }",
			want: "main() {\n\treturn (L'\\0') + 100;\n}\nvoid f() { exit ((L'1' != L'1') + 100); }"},
		{name: "negative literal is an expression", hasMain: true,
			src:  "int main(void) { return -1; }",
			want: "int main(void) { return (-1) + 100; }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, hasMain, err := withNonce([]byte(tt.src), k)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if hasMain != tt.hasMain {
				t.Errorf("hasMain %v, want %v", hasMain, tt.hasMain)
			}
			if string(out) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out, tt.want)
			}
		})
	}
}

// K never makes the nonce's exit code 0 or the original one, and the
// same secret and name always give the same K.
func TestNonceFor(t *testing.T) {
	secrets := [][]byte{[]byte("a"), []byte("another secret")}
	for _, s := range secrets {
		for e := range 256 {
			for _, name := range []string{"torture/a.c", "wacct/chapter_1/valid/return_2.c", strings.Repeat("x", e)} {
				k := nonceFor(s, name, e)
				if k < 1 || k > 255 || (e+k)%256 == 0 || (e+k)%256 == e {
					t.Fatalf("secret %q, %s, expect %d: K %d", s, name, e, k)
				}
				if nonceFor(s, name, e) != k {
					t.Fatal("K is not a function of its inputs")
				}
			}
		}
	}
	if nonceFor(secrets[0], "torture/a.c", 0) == nonceFor(secrets[1], "torture/a.c", 0) &&
		nonceFor(secrets[0], "torture/b.c", 0) == nonceFor(secrets[1], "torture/b.c", 0) &&
		nonceFor(secrets[0], "torture/c.c", 0) == nonceFor(secrets[1], "torture/c.c", 0) {
		t.Error("the secret does not change K")
	}
}

// Each invalid wacct program's neighbour is a valid program of its
// chapter, the most alike.
func TestWacctNeighbours(t *testing.T) {
	src := map[string]string{
		"wacct/chapter_1/valid/return_2.c":              "int main(void) { return 2; }",
		"wacct/chapter_1/valid/multi_digit.c":           "int main(void) {\n return 100; }",
		"wacct/chapter_1/invalid_parse/no_semicolon.c":  "int main(void) { return 2 }",
		"wacct/chapter_2/valid/neg.c":                   "int main(void) { return -5; }",
		"wacct/chapter_2/invalid_parse/missing_const.c": "int main(void) { return ~; }",
	}
	var cases []testCase
	shapes := map[string]map[string]bool{}
	for name, s := range src {
		parts := strings.Split(name, "/")
		cases = append(cases, testCase{name: name, group: parts[1], expectReject: strings.HasPrefix(parts[2], "invalid")})
		shapes[name] = bigrams([]byte(s))
	}
	sortCases(cases)
	wacctNeighbours(cases, shapes)
	want := map[string]string{
		"wacct/chapter_1/invalid_parse/no_semicolon.c":  "wacct/chapter_1/valid/return_2.c",
		"wacct/chapter_2/invalid_parse/missing_const.c": "wacct/chapter_2/valid/neg.c",
	}
	for _, c := range cases {
		if c.neighbour != want[c.name] {
			t.Errorf("%s: neighbour %q, want %q", c.name, c.neighbour, want[c.name])
		}
	}
}

// judge: a refusal counts beside a neighbour that passed (its final
// verdict, whatever the order), an unguarded pass beside a guarded one.
func TestJudge(t *testing.T) {
	zero := intp(0)
	cases := []testCase{
		{name: "wacct/chapter_1/invalid_parse/a.c", expectReject: true},        // neighbour 4 (later, unguarded, revoked)
		{name: "wacct/chapter_1/invalid_parse/b.c", expectReject: true},        // neighbour 2, guarded, passed
		{name: "wacct/chapter_1/valid/guarded.c", exitCode: intp(7), nonce: 9}, // passed
		{name: "wacct/chapter_1/valid/unguarded.c", exitCode: zero},            // passed beside a guarded wacct pass
		{name: "torture/u.c", exitCode: zero},                                  // passed, no guarded torture pass
		{name: "torture/g.c", exitCode: zero, nonce: 5},                        // failed
		{name: "basics/x/g.c", exitCode: zero, nonce: 5},                       // passed
		{name: "basics/x/h.c", exitCode: zero, nonce: 6},                       // failed, fixed-like
		{name: "basics/x/u.c", exitCode: zero},                                 // passed, but the suite shows a fixed-like case
	}
	results := []environment.CaseResult{{Passed: true}, {Passed: true}, {Passed: true}, {Passed: true}, {Passed: true}, {Passed: false},
		{Passed: true}, {FixedLike: true}, {Passed: true}}
	neighbour := []int{4, 2, -1, -1, -1, -1, -1, -1, -1}
	judge(cases, results, neighbour, len(cases))
	want := []bool{false, true, true, true, false, false, true, false, false}
	for i, r := range results {
		if r.Passed != want[i] {
			t.Errorf("%s: passed %v, want %v (%s)", cases[i].name, r.Passed, want[i], r.Error)
		}
	}
	if !strings.Contains(results[0].Error, "torture/u.c") {
		t.Errorf("the refused case's error does not name its neighbour: %q", results[0].Error)
	}
	if !results[3].Unguarded || !results[4].Unguarded || results[2].Unguarded {
		t.Errorf("unguarded marks: %v %v %v", results[2].Unguarded, results[3].Unguarded, results[4].Unguarded)
	}
}
