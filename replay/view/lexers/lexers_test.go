package lexers_test

import (
	"slices"
	"testing"

	"github.com/alecthomas/chroma/v2"
	chromalexers "github.com/alecthomas/chroma/v2/lexers"

	"github.com/trajlab/traj/replay/view/lexers"
)

// dropped are chroma's Go-coded lexers this package does not build (see
// the package doc): a chroma upgrade that adds or renames one fails here.
var dropped = []string{
	"Caddyfile", "Caddyfile Directives", "Gemtext", "Genshi", "Genshi HTML", "Genshi Text",
	"Haxe", "HTTP", "Markless", "PHTML", "Raku", "reStructuredText", "Svelte", "YAML+Jinja",
}

// TestSameAsChroma: the set built on first use holds every lexer of
// chroma's own registry (the version go.mod requires) but the dropped
// ones, and matches file names as chroma does; a definitions.tar.zst
// packed from another chroma version fails here.
func TestSameAsChroma(t *testing.T) {
	reg, err := lexers.Registry()
	if err != nil {
		t.Fatal(err)
	}
	ours := reg.Names(false)
	for _, name := range chromalexers.Names(false) {
		if !slices.Contains(ours, name) && !slices.Contains(dropped, name) {
			t.Errorf("chroma's lexer %q is missing: repack (go generate ./replay/view/lexers)", name)
		}
	}
	for _, name := range ours {
		if !slices.Contains(chromalexers.Names(false), name) {
			t.Errorf("lexer %q is not chroma's", name)
		}
	}
	for _, name := range dropped {
		if slices.Contains(ours, name) {
			t.Errorf("%q is built: take it off the dropped list", name)
		}
	}
	for _, file := range []string{
		"main.c", "cc.h", "driver.cpp", "gen.py", "Makefile", "build.sh", "notes.md", "README.markdown", "plan.json",
		"task.yaml", "go.mod", "main.go", "lib.rs", "index.ts", "app.js", "Dockerfile", "out.s", "x.ll", "CMakeLists.txt",
		"Cargo.toml", "page.html", "style.css", "run.lua", "a.diff", "q.sql", "t.rb", "M.java", "K.kt", "S.swift", "X.cs",
	} {
		got, want := lexers.Match(file), chromalexers.Match(file)
		if (got == nil) != (want == nil) || (got != nil && got.Config().Name != want.Config().Name) {
			t.Errorf("%s: lexer %v, chroma's %v", file, name(got), name(want))
		}
	}
}

// TestGoCodedLexers: Go's and Markdown's lexers highlight as chroma's do,
// Markdown's frontmatter through the YAML lexer of the same set.
func TestGoCodedLexers(t *testing.T) {
	for _, tc := range []struct{ file, text string }{
		{"main.go", "package main\n\nimport \"fmt\"\n\n// Hi.\nfunc main() { fmt.Println(`a {{.b}}`, 3+4i) }\n"},
		{"notes.md", "---\ntitle: plan\ntags: [a, b]\n---\n# Plan\n\n- [x] lexer\n- **parser** and `cc`\n\n```c\nint main(void) { return 0; }\n```\n"},
	} {
		got, want := tokens(t, lexers.Match(tc.file), tc.text), tokens(t, chromalexers.Match(tc.file), tc.text)
		if !slices.Equal(got, want) {
			t.Errorf("%s: tokens differ from chroma's:\n%v\nwant\n%v", tc.file, got, want)
		}
		if len(got) < 10 {
			t.Errorf("%s: only %d tokens", tc.file, len(got))
		}
	}
}

func tokens(t *testing.T, lx chroma.Lexer, text string) []chroma.Token {
	t.Helper()
	if lx == nil {
		t.Fatal("no lexer")
	}
	it, err := lx.Tokenise(nil, text)
	if err != nil {
		t.Fatal(err)
	}
	return it.Tokens()
}

func name(lx chroma.Lexer) string {
	if lx == nil {
		return "none"
	}
	return lx.Config().Name
}
