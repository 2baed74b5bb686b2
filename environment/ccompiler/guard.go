package ccompiler

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/trajlab/traj/environment"
)

// Evidence, case by case (see nonce.go for the rewrite): a pass shows
// that the artifact compiled that case.
//
//   - A runnable case is guarded: it runs rewritten with its nonce K,
//     and must exit with (E+K) mod 256. What a CaseResult says (expected
//     and actual exit code) is given back in the original case's terms
//     (the actual code less K), so no answer shows the rewrite.
//   - A wacct invalid program counts only beside its neighbour: the
//     valid program of its chapter most like it (wacctNeighbour). It
//     passes when the compiler refuses it and compiles its neighbour
//     correctly (nonce included); the neighbour runs hidden when the
//     test path does not hold it.
//   - A runnable case the rewrite cannot handle (unguarded: no main, a
//     bare `return;` in main, or listed in untransformable.go) is scored
//     by its original rule, and its pass counts only when the same run
//     passed a guarded case of its suite and no case of the suite was
//     fixed-like: a fixed program passes no guarded case, and a compiler
//     that falls back to the do-nothing program shows it on the guarded
//     cases it cannot compile, so neither gains from them. (Measured on
//     the full public suites: the few-shapes compiler with an exit-0
//     fallback passed c_testsuite/00066.c, unguarded, beside the cases it
//     compiled, one more than its refusing twin, until the second rule.)
//
// No failure voids a suite: a case's pass depends on its own evidence
// (and, for the two kinds above, one other case's).

// guardOf prepares tc for a run: its sources rewritten with the nonce
// (tc.generated), its exit code the nonce's, tc.nonce set. A case that
// is not runnable, or unguarded, is returned as it is. A fresh case is
// its own evidence (generated per artifact, never the do-nothing
// program's behaviour: environment/ccompiler/fresh) and runs as it is.
func (e *Env) guardOf(tc testCase, secret []byte) (testCase, error) {
	if tc.expectReject || tc.exitCode == nil || untransformable[canonicalName(tc.name)] != "" || strings.HasPrefix(tc.name, SuiteFresh+"/") {
		return tc, nil
	}
	orig := *tc.exitCode
	k := nonceFor(secret, tc.name, orig)
	gen := make([][]byte, len(tc.sources))
	mains := 0
	for i := range tc.sources {
		data, err := e.source(tc, i)
		if err != nil {
			return tc, err
		}
		out, hasMain, err := withNonce(data, k)
		if err != nil {
			return tc, nil // unguarded: the rewrite cannot handle it
		}
		if hasMain {
			mains++
		}
		gen[i] = out
	}
	var sup [][]byte
	for _, p := range tc.support {
		data, err := os.ReadFile(p)
		if err != nil {
			return tc, fmt.Errorf("read %s: %w", p, err)
		}
		out, hasMain, err := withNonce(data, k)
		if err != nil {
			return tc, nil
		}
		if hasMain {
			mains++
		}
		sup = append(sup, out)
	}
	if mains != 1 {
		return tc, nil
	}
	g := tc
	g.generated = gen
	g.supportGen = sup
	g.exitCode = intp((orig + k) % 256)
	g.nonce = k
	g.origExit = orig
	return g, nil
}

// canonicalName is the name untransformable lists a case under
// (torture_std's cases are torture's).
func canonicalName(name string) string {
	if rest, ok := strings.CutPrefix(name, SuiteTortureStd+"/"); ok {
		return SuiteTorture + "/" + rest
	}
	return name
}

// source reads the i-th source of tc as a compile is shown it.
func (e *Env) source(tc testCase, i int) ([]byte, error) {
	src := tc.sources[i]
	switch {
	case tc.generated != nil:
		return tc.generated[i], nil
	case tc.embedded:
		// The expectation is the host's: the compile never sees it.
		data, err := fs.ReadFile(basicsFS, src)
		if err != nil {
			return nil, fmt.Errorf("read source %s: %w", src, err)
		}
		return stripExpect(data), nil
	default:
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("read source %s: %w", src, err)
		}
		return data, nil
	}
}

// runSecret is opts' secret, or a fresh one for this run alone (a
// trusted `traj env test`: nothing to reproduce).
func runSecret(s []byte) ([]byte, error) {
	if len(s) > 0 {
		return s, nil
	}
	s = make([]byte, 32)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("evaluation secret: %w", err)
	}
	return s, nil
}

// withEvidence adds to cases (the test path's, in order) the hidden
// neighbours its wacct invalid programs need, and returns the full list
// with, for each, the index of its neighbour in it (-1: none).
func (e *Env) withEvidence(cases []testCase) (all []testCase, neighbour []int) {
	all = append([]testCase(nil), cases...)
	at := map[string]int{}
	for i, c := range cases {
		at[c.name] = i
	}
	neighbour = make([]int, len(cases))
	for i, c := range cases {
		neighbour[i] = -1
		if !c.expectReject || c.neighbour == "" {
			continue
		}
		j, ok := at[c.neighbour]
		if !ok {
			nb, found := e.caseNamed(c.neighbour)
			if !found {
				continue
			}
			j = len(all)
			all = append(all, nb)
			at[c.neighbour] = j
		}
		neighbour[i] = j
	}
	return all, append(neighbour, make([]int, len(all)-len(cases))...)
}

// caseNamed finds a case of a loaded suite by its name.
func (e *Env) caseNamed(name string) (testCase, bool) {
	suiteName, _, _ := strings.Cut(name, "/")
	for _, c := range e.suites[suiteName].cases {
		if c.name == name {
			return c, true
		}
	}
	return testCase{}, false
}

// judge applies the evidence rules to the results of a run's cases
// (results[:n] are the test path's, the rest hidden neighbours).
func judge(cases []testCase, results []environment.CaseResult, neighbour []int, n int) {
	guardedPass, fixedLike := map[string]bool{}, map[string]bool{}
	for i, c := range cases {
		suite, _, _ := strings.Cut(c.name, "/")
		if c.nonce != 0 && results[i].Passed {
			guardedPass[suite] = true
		}
		if results[i].FixedLike {
			fixedLike[suite] = true
		}
	}
	// Unguarded runnable cases first (hidden neighbours too): a refusal
	// below reads its neighbour's final verdict.
	for i, c := range cases {
		if c.nonce != 0 || c.exitCode == nil || c.expectReject || strings.HasPrefix(c.name, SuiteFresh+"/") {
			continue // guarded, not runnable, or fresh (its own evidence)
		}
		r := &results[i]
		r.Unguarded = true
		suite, _, _ := strings.Cut(c.name, "/")
		if r.Passed && (!guardedPass[suite] || fixedLike[suite]) {
			r.Passed = false
			r.Error = "passed, but this case counts only when the same compiler passes another case of its suite and none of them as a program ignoring its input would"
		}
	}
	for i := range n {
		c, r := cases[i], &results[i]
		if !c.expectReject {
			continue
		}
		j := neighbour[i]
		if !r.Passed || j < 0 {
			// No neighbour (a chapter without valid programs): the
			// refusal alone, as before.
			r.Unguarded = r.Passed && j < 0
			continue
		}
		if !results[j].Passed {
			r.Passed = false
			r.Error = fmt.Sprintf("refused, but a refusal counts only beside a compiled program: its neighbour %s did not pass", cases[j].name)
		}
	}
}

// Neighbour names the valid case beside which the wacct invalid program
// name's refusal counts ("" for any other case): for tests and reports
// that check the rule from outside.
func (e *Env) Neighbour(name string) string {
	c, _ := e.caseNamed(name)
	return c.neighbour
}
