package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMECommandsParse: every `traj …` command the README shows in a
// shell block parses as shown (placeholders filled in, optional [groups]
// included, their first alternative taken), and every `make TARGET` it
// names is a Makefile target. A renamed flag or command cannot leave the
// README behind.
func TestREADMECommandsParse(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	// The README's commands run from the repository root, on folders and
	// files that exist.
	dir := t.TempDir()
	file := writeFile(t, dir+"/script.jsonl", []byte(`{"text":"a"}`+"\n"))
	t.Chdir("../..")
	placeholders := strings.NewReplacer(
		"PROVIDER/MODEL", "prov/model", "REF…", "x", "REF", "x", "ID", "x", "DIR", dir,
		"FILE", file, "URL", "./runs", " P ", " 1 ", " N ", " 2 ", "…", "k")
	optional := regexp.MustCompile(`\[([^\[\]]*)\]`)
	var cmds [][]string
	var targets []string
	written := map[string]string{}
	inShell := false
	// A command continued with a trailing backslash is one command.
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(readme), "\\\n", " ")))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			inShell = line == "```sh"
			continue
		case inShell && strings.HasPrefix(line, "make "):
			line, _, _ = strings.Cut(line, "#")
			for _, w := range strings.Fields(line)[1:] {
				if !strings.Contains(w, "=") {
					targets = append(targets, w)
				}
			}
			continue
		case !inShell || !strings.HasPrefix(line, "traj "):
			continue
		}
		if i := strings.Index(line, " # "); i >= 0 {
			line = line[:i]
		}
		for optional.MatchString(line) {
			line = optional.ReplaceAllStringFunc(line, func(g string) string {
				alt, _, _ := strings.Cut(g[1:len(g)-1], "|")
				return alt
			})
		}
		line = placeholders.Replace(line + " ")
		for name, path := range written {
			line = strings.ReplaceAll(line, " "+name+" ", " "+path+" ")
		}
		// A line that writes a file (> NAME) parses without the
		// redirection, and the lines after it find NAME written.
		if cmd, out, ok := strings.Cut(line, " > "); ok {
			name := strings.TrimSpace(out)
			written[name] = writeFile(t, filepath.Join(dir, filepath.Base(name)), []byte(`{"text":"a"}`+"\n"))
			line = cmd + " "
		}
		args := shellFields(line)[1:]
		for i, a := range args {
			// A spec file the README names as an example (sweep.yaml):
			// the user writes it; here an empty one stands in.
			if strings.HasSuffix(a, ".yaml") && !strings.HasPrefix(a, "-") && i > 0 && args[i-1] != "--out" {
				args[i] = writeFile(t, filepath.Join(dir, filepath.Base(a)), nil)
			}
		}
		cmds = append(cmds, args)
	}
	if len(cmds) < 15 {
		t.Fatalf("found only %d traj commands in the README", len(cmds))
	}
	for _, args := range cmds {
		var cli CLI
		parser, err := newParser(context.Background(), &cli, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(args); err != nil {
			t.Errorf("README: traj %s: %v", strings.Join(args, " "), err)
		}
	}
	for _, m := range regexp.MustCompile("`make ([a-z-]+)").FindAllStringSubmatch(string(readme), -1) {
		targets = append(targets, m[1])
	}
	if !slices.Contains(targets, "install") {
		t.Error("the README does not say how to put traj on PATH (make install)")
	}
	for _, target := range targets {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
			t.Errorf("README names make %s, which the Makefile does not define", target)
		}
	}
}

// shellFields splits a command line as sh does for words in single or
// double quotes (no escapes or expansions: the README shows none).
func shellFields(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
