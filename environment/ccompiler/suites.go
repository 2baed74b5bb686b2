package ccompiler

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/trajlab/traj/environment"
)

// testCase is one case of a suite, ready to run.
type testCase struct {
	name  string // full name, e.g. "wacct/chapter_1/valid/return_2.c"
	group string // basics category, wacct "chapter_<n>", "" otherwise
	// sources are compiled together; basics cases read from the embedded
	// files (embedded true), the public suites from disk.
	sources  []string
	embedded bool
	// generated holds the content of each source as the compile is shown
	// it when it is not the file's (the nonce's rewrite).
	generated [][]byte
	// support files are copied beside the sources but not passed to the
	// compiler: a torture test's #include "sibling.c".
	support []string
	// supportGen holds each support file rewritten with the nonce (a
	// sibling that holds main).
	supportGen [][]byte

	expectReject bool // wacct invalid_*: the compiler must refuse it
	// neighbour is the valid case (by name) beside which a wacct invalid
	// program's refusal counts (wacctNeighbour).
	neighbour string
	// nonce is K when the case runs rewritten with its nonce (guardOf);
	// origExit is then its original expected exit code.
	nonce, origExit   int
	stdout            *string // nil: stdout not checked
	exitCode          *int    // nil: exit code not checked
	combineStderr     bool    // c_testsuite: stdout+stderr together match stdout
	expectEmptyStderr bool    // wacct valid programs
}

// suite is the loaded cases of one suite, sorted by name.
type suite struct {
	name  string
	cases []testCase
	// missing explains why the suite is absent (nil when present).
	missing error
}

// Where each public suite lives under the fixtures root, and where it comes from.
var suiteSources = map[string]struct{ dir, repo string }{
	SuiteWacct:      {"wacct", "github.com/nlsandler/writing-a-c-compiler-tests (tests/, expected_results.json, test_properties.json)"},
	SuiteCTestsuite: {"c-testsuite", "github.com/c-testsuite/c-testsuite (tests/single-exec)"},
	SuiteTorture:    {"torture", "github.com/llvm/llvm-test-suite (SingleSource/Regression/C/gcc-c-torture/execute)"},
	SuiteTortureStd: {"torture", "github.com/llvm/llvm-test-suite (SingleSource/Regression/C/gcc-c-torture/execute)"},
}

func missingSuite(name, root, want string) error {
	src := suiteSources[name]
	if root == "" {
		return fmt.Errorf("%w: %s: no fixtures root given (--tests-dir or TRAJ_TESTS_DIR); expected a folder %s/ from %s",
			environment.ErrSuiteMissing, name, src.dir, src.repo)
	}
	return fmt.Errorf("%w: %s: %s not found; copy it from %s",
		environment.ErrSuiteMissing, name, want, src.repo)
}

// hashFile adds a file's relative name and content to the version
// digest's input h.
func hashFile(h io.Writer, rel string, data []byte) {
	sum := sha256.Sum256(data)
	fmt.Fprintf(h, "file %s %x\n", rel, sum)
}

func intp(n int) *int         { return &n }
func strp(s string) *string   { return &s }
func isDir(p string) bool     { st, err := os.Stat(p); return err == nil && st.IsDir() }
func sortCases(cs []testCase) { sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name }) }
func relSlash(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// cFiles returns the names of the .c files directly in dir, the folder of
// the flat suite name under root, or why the suite is missing (an absent
// suite is recorded in the version digest as such).
func cFiles(name, root, dir string, h io.Writer) ([]string, error) {
	if root == "" || !isDir(dir) {
		fmt.Fprintf(h, "absent %s\n", name)
		return nil, missingSuite(name, root, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", environment.ErrSuiteMissing, dir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".c") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// loadCTestsuite reads c-testsuite/tests/single-exec: every N.c with an
// N.c.expected beside it.
func loadCTestsuite(root string, h io.Writer) suite {
	s := suite{name: SuiteCTestsuite}
	dir := filepath.Join(root, "c-testsuite", "tests", "single-exec")
	names, err := cFiles(s.name, root, dir, h)
	if err != nil {
		s.missing = err
		return s
	}
	for _, name := range names {
		src := filepath.Join(dir, name)
		want, err := os.ReadFile(src + ".expected")
		if err != nil {
			continue // not a single-exec test without its expected output
		}
		data, err := os.ReadFile(src)
		if err != nil {
			continue
		}
		hashFile(h, "c-testsuite/"+name, data)
		hashFile(h, "c-testsuite/"+name+".expected", want)
		s.cases = append(s.cases, testCase{
			name:          SuiteCTestsuite + "/" + name,
			sources:       []string{src},
			stdout:        strp(string(want)),
			exitCode:      intp(0),
			combineStderr: true,
		})
	}
	sortCases(s.cases)
	return s
}

// loadTorture reads the top-level execute/*.c tests into two suites:
// torture (all of them but tortureExcluded) and torture_std (its
// standard-C subset). See torture_skip.go.
func loadTorture(root string, h io.Writer) (full, std suite) {
	full, std = suite{name: SuiteTorture}, suite{name: SuiteTortureStd}
	dir := filepath.Join(root, "torture", "SingleSource", "Regression", "C", "gcc-c-torture", "execute")
	names, err := cFiles(full.name, root, dir, h)
	if err != nil {
		full.missing, std.missing = err, err
		return full, std
	}
	for _, name := range names {
		src := filepath.Join(dir, name)
		data, err := os.ReadFile(src)
		if err != nil {
			continue
		}
		hashFile(h, "torture/"+name, data)
		if tortureExcludedReason(name) != "" {
			continue
		}
		support := siblingIncludes(dir, name, data)
		full.cases = append(full.cases, testCase{
			name:     SuiteTorture + "/" + name,
			sources:  []string{src},
			support:  support,
			exitCode: intp(0),
		})
		if tortureSkipReason(name, data) != "" {
			continue
		}
		std.cases = append(std.cases, testCase{
			name:     SuiteTortureStd + "/" + name,
			sources:  []string{src},
			support:  support,
			exitCode: intp(0),
		})
	}
	sortCases(full.cases)
	sortCases(std.cases)
	return full, std
}

var quotedInclude = regexp.MustCompile(`(?m)^\s*#\s*include\s*"([^"/\\]+)"`)

// siblingIncludes are the other files of dir that src (named name)
// includes with #include "file" (a few torture tests share a body this
// way), so the runner can copy them into the case's folder.
func siblingIncludes(dir, name string, src []byte) []string {
	var out []string
	for _, m := range quotedInclude.FindAllSubmatch(src, -1) {
		inc := string(m[1])
		if inc == name || slices.Contains(out, filepath.Join(dir, inc)) {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, inc)); err == nil && st.Mode().IsRegular() {
			out = append(out, filepath.Join(dir, inc))
		}
	}
	return out
}

// wacctExpected is one entry of expected_results.json.
type wacctExpected struct {
	ReturnCode int     `json:"return_code"`
	Stdout     *string `json:"stdout"`
}

// loadWacct reads wacct/tests/chapter_<n>/{valid,invalid_*}/**.c.
// Valid programs take their expectations from expected_results.json;
// invalid ones must be rejected. Under valid/libraries/, X_client.c is
// compiled together with X.c (the suite's separate-compilation tests), and
// X.c is not a case of its own.
func loadWacct(root string, h io.Writer) suite {
	s := suite{name: SuiteWacct}
	base := filepath.Join(root, "wacct")
	testsDir := filepath.Join(base, "tests")
	if root == "" || !isDir(testsDir) {
		s.missing = missingSuite(SuiteWacct, root, testsDir)
		fmt.Fprintf(h, "absent %s\n", s.name)
		return s
	}
	expPath := filepath.Join(base, "expected_results.json")
	expData, err := os.ReadFile(expPath)
	if err != nil {
		s.missing = missingSuite(SuiteWacct, root, expPath)
		return s
	}
	hashFile(h, "wacct/expected_results.json", expData)
	expected := map[string]wacctExpected{}
	shapes := map[string]map[string]bool{}
	if err := json.Unmarshal(expData, &expected); err != nil {
		s.missing = fmt.Errorf("%w: parse %s: %v", environment.ErrSuiteMissing, expPath, err)
		return s
	}
	err = filepath.WalkDir(testsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".c") {
			return nil
		}
		rel := relSlash(testsDir, p) // chapter_1/valid/return_2.c
		parts := strings.Split(rel, "/")
		if len(parts) < 3 || !strings.HasPrefix(parts[0], "chapter_") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		hashFile(h, "wacct/tests/"+rel, data)
		shapes[SuiteWacct+"/"+rel] = bigrams(data)
		tc := testCase{name: SuiteWacct + "/" + rel, group: parts[0], sources: []string{p}}
		switch {
		case parts[1] == "valid":
			if parts[len(parts)-2] == "libraries" && !strings.HasSuffix(rel, "_client.c") {
				client := strings.TrimSuffix(p, ".c") + "_client.c"
				if _, err := os.Stat(client); err == nil {
					return nil // compiled with its client
				}
			}
			want, ok := expected[rel]
			if !ok {
				return nil // a helper file, not a test
			}
			if lib, ok := strings.CutSuffix(p, "_client.c"); ok && parts[len(parts)-2] == "libraries" {
				if _, err := os.Stat(lib + ".c"); err == nil {
					tc.sources = append(tc.sources, lib+".c")
				}
			}
			tc.exitCode = intp(want.ReturnCode)
			tc.stdout = strp("")
			if want.Stdout != nil {
				tc.stdout = want.Stdout
			}
			tc.expectEmptyStderr = true
		case strings.HasPrefix(parts[1], "invalid_"):
			tc.expectReject = true
		default:
			return nil
		}
		s.cases = append(s.cases, tc)
		return nil
	})
	if err != nil {
		s.missing = fmt.Errorf("%w: walk %s: %v", environment.ErrSuiteMissing, testsDir, err)
		return s
	}
	sortCases(s.cases)
	wacctNeighbours(s.cases, shapes)
	return s
}

// wacctNeighbours gives each invalid program its neighbour: the valid
// program of its chapter whose source is most like it (Jaccard
// similarity of their sets of adjacent token pairs; ties to the first by
// name). A refusal is evidence of a compiler only beside a program of
// the same chapter that it compiles: a compiler that refuses all it
// cannot interpret refuses the neighbour too.
func wacctNeighbours(cases []testCase, shapes map[string]map[string]bool) {
	for i := range cases {
		c := &cases[i]
		if !c.expectReject {
			continue
		}
		best, bestSim := "", -1.0
		for _, v := range cases {
			if v.expectReject || v.group != c.group {
				continue
			}
			if sim := jaccard(shapes[c.name], shapes[v.name]); sim > bestSim {
				best, bestSim = v.name, sim
			}
		}
		c.neighbour = best
	}
}

// bigrams is the set of adjacent token pairs of a C source.
func bigrams(src []byte) map[string]bool {
	toks := lexC(src)
	set := make(map[string]bool, len(toks))
	prev := ""
	for _, t := range toks {
		cur := string(src[t.start:t.end])
		set[prev+" "+cur] = true
		prev = cur
	}
	return set
}

func jaccard(a, b map[string]bool) float64 {
	if len(a)+len(b) == 0 {
		return 0
	}
	n := 0
	for k := range a {
		if b[k] {
			n++
		}
	}
	return float64(n) / float64(len(a)+len(b)-n)
}

// chapterOf returns n for a group "chapter_<n>".
func chapterOf(group string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(group, "chapter_"))
	if err != nil {
		return 0
	}
	return n
}

// loadBasics parses the embedded basics suite: basics/<category>/<name>.c,
// or basics/multi_file/<case>/*.c compiled together. The expectation is a
// comment line `// expect: exit=N stdout="..."` (stdout is a Go-quoted
// string; absent means empty) in the case's first file that has one.
func loadBasics(fsys fs.FS, h io.Writer) (suite, error) {
	s := suite{name: SuiteBasics}
	cats, err := fs.ReadDir(fsys, "basics")
	if err != nil {
		return s, fmt.Errorf("read embedded basics: %w", err)
	}
	for _, cat := range cats {
		if !cat.IsDir() {
			continue
		}
		catDir := path.Join("basics", cat.Name())
		entries, err := fs.ReadDir(fsys, catDir)
		if err != nil {
			return s, fmt.Errorf("read embedded %s: %w", catDir, err)
		}
		for _, e := range entries {
			var files []string
			caseName := e.Name()
			if e.IsDir() {
				sub, err := fs.ReadDir(fsys, path.Join(catDir, e.Name()))
				if err != nil {
					return s, fmt.Errorf("read embedded %s: %w", e.Name(), err)
				}
				for _, f := range sub {
					if strings.HasSuffix(f.Name(), ".c") {
						files = append(files, path.Join(catDir, e.Name(), f.Name()))
					}
				}
			} else if strings.HasSuffix(caseName, ".c") {
				files = []string{path.Join(catDir, caseName)}
			}
			if len(files) == 0 {
				continue
			}
			tc := testCase{name: path.Join(SuiteBasics, cat.Name(), caseName), group: cat.Name(), sources: files, embedded: true}
			found := false
			for _, f := range files {
				data, err := fs.ReadFile(fsys, f)
				if err != nil {
					return s, fmt.Errorf("read embedded %s: %w", f, err)
				}
				hashFile(h, f, data)
				if found {
					continue
				}
				exit, stdout, ok, err := parseExpect(string(data))
				if err != nil {
					return s, fmt.Errorf("basics case %s: %w", f, err)
				}
				if ok {
					tc.exitCode, tc.stdout, found = intp(exit), strp(stdout), true
				}
			}
			if !found {
				return s, fmt.Errorf("basics case %s: no `// expect:` line", tc.name)
			}
			s.cases = append(s.cases, tc)
		}
	}
	sortCases(s.cases)
	return s, nil
}

// stripExpect blanks the `// expect:` lines of a basics source (keeping
// line numbers): a compile sees the program, never its expectation.
func stripExpect(src []byte) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "// expect:") {
			lines[i] = l[len(strings.TrimRight(l, "\r\n")):] // the line ending only
		}
	}
	return []byte(strings.Join(lines, ""))
}

// parseExpect finds `// expect: exit=N stdout="..."` in a C source.
func parseExpect(src string) (exit int, stdout string, ok bool, err error) {
	for _, line := range strings.Split(src, "\n") {
		rest, found := strings.CutPrefix(strings.TrimSpace(line), "// expect:")
		if !found {
			continue
		}
		rest = strings.TrimSpace(rest)
		for rest != "" {
			switch {
			case strings.HasPrefix(rest, "exit="):
				rest = rest[len("exit="):]
				end := strings.IndexByte(rest, ' ')
				if end < 0 {
					end = len(rest)
				}
				exit, err = strconv.Atoi(rest[:end])
				if err != nil || exit < 0 || exit > 255 {
					return 0, "", false, fmt.Errorf("expect: bad exit %q", rest[:end])
				}
				rest = rest[end:]
			case strings.HasPrefix(rest, "stdout="):
				rest = rest[len("stdout="):]
				q, qerr := strconv.QuotedPrefix(rest)
				if qerr != nil {
					return 0, "", false, fmt.Errorf("expect: bad stdout: %w", qerr)
				}
				stdout, _ = strconv.Unquote(q)
				rest = rest[len(q):]
			default:
				return 0, "", false, errors.New("expect: want exit=N and/or stdout=\"...\"")
			}
			rest = strings.TrimSpace(rest)
		}
		return exit, stdout, true, nil
	}
	return 0, "", false, nil
}
