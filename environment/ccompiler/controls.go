package ccompiler

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"strings"

	"github.com/trajlab/traj/environment"
)

// Controls guard the suites whose pass rule a program that ignores its
// input can meet: torture passes on "exit 0", most c-testsuite and some
// wacct and basics cases expect exit 0 and empty output, and wacct's
// invalid programs pass on any refusal. Every Run adds, for each suite
// among its cases, controlsPerSuite programs generated from a fresh
// random nonce, shaped like the suite's simplest cases and using only
// their C features, each of which must exit with its own nonce-derived
// non-zero code (and print nothing). A real compiler gets them right; a
// compiler whose output does not depend on its input cannot (two
// different codes, neither 0), and neither can one that always fails. If
// any control of a suite fails, the suite is voided: every case of it
// counts as failed, and Result.Voided says why. Controls run through the
// same executor as the cases, in folders like theirs, in random order:
// no action can tell them apart, and their expectations, like every
// case's, never leave the host.
const controlsPerSuite = 2

// controlsFor generates the controls of every suite among cases.
func controlsFor(cases []testCase) ([]testCase, error) {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("control nonce: %w", err)
	}
	rng := mrand.New(mrand.NewChaCha8(seed))
	var out []testCase
	seen := map[string]bool{}
	for _, c := range cases {
		suite, _, _ := strings.Cut(c.name, "/")
		// The fresh suite needs none: its programs are new per artifact
		// and none exits 0 silently (environment/ccompiler/fresh).
		if seen[suite] || suite == SuiteFresh {
			continue
		}
		seen[suite] = true
		codes := map[int]bool{}
		for range controlsPerSuite {
			k := 1 + rng.IntN(255)
			for codes[k] {
				k = 1 + rng.IntN(255)
			}
			codes[k] = true
			out = append(out, control(suite, k, rng))
		}
	}
	return out, nil
}

// control is one control of suite: a program whose correct compilation
// exits with k (1..255) and prints nothing.
func control(suite string, k int, rng *mrand.Rand) testCase {
	tc := testCase{name: suite + "/control", exitCode: intp(k), stdout: strp("")}
	var name, src string
	switch suite {
	case SuiteTorture, SuiteTortureStd:
		// Like the short execute tests: a function and a call; the code
		// is computed, not written.
		a, b, c := 2+rng.IntN(40), 2+rng.IntN(40), 256+rng.IntN(700)
		name = fmt.Sprintf("20%06d-1.c", rng.IntN(1000000))
		src = fmt.Sprintf("int f (int a, int b)\n{\n  return a * b + %d;\n}\n\nint\nmain (void)\n{\n  return f (%d, %d) - %d;\n}\n", c, a, b, a*b+c-k)
		tc.stdout = nil // torture checks the exit code only
	case SuiteCTestsuite:
		// Like tests/single-exec/00003.c.
		b := 1 + rng.IntN(900)
		name = fmt.Sprintf("%05d.c", 1000+rng.IntN(9000))
		src = fmt.Sprintf("int\nmain()\n{\n\tint x;\n\n\tx = %d;\n\treturn x - %d;\n}\n", b+k, b)
		tc.combineStderr = true
	case SuiteWacct:
		// Like chapter_1/valid/return_2.c.
		name = fmt.Sprintf("return_%d.c", rng.IntN(1000))
		src = fmt.Sprintf("int main(void) {\n    return %d;\n}\n", k)
		tc.expectEmptyStderr = true
	default: // basics, like smoke/arith_exit.c
		b, c := 2+rng.IntN(9), 2+rng.IntN(9)
		name = fmt.Sprintf("arith_%d.c", rng.IntN(1000))
		src = fmt.Sprintf("int main(void) { return %d - %d * %d; }\n", k+b*c, b, c)
	}
	tc.sources = []string{name}
	tc.generated = [][]byte{[]byte(src)}
	return tc
}

// shuffled is a random permutation of 0..n-1.
func shuffled(n int) []int {
	return mrand.Perm(n)
}

// voidSuites marks failed every case of a suite one of whose controls
// failed, and lists those suites with the reason.
func voidSuites(cases []environment.CaseResult, ctls []testCase, results []environment.CaseResult) []environment.Void {
	var voided []environment.Void
	reason := map[string]string{}
	for i, r := range results {
		suite, _, _ := strings.Cut(ctls[i].name, "/")
		if r.Passed || reason[suite] != "" {
			continue
		}
		why := r.Error
		if why == "" {
			why = "phase " + r.Phase
		}
		reason[suite] = fmt.Sprintf("a control (a program generated for this evaluation, expected to exit %d with no output) failed: %s", *ctls[i].exitCode, why)
		voided = append(voided, environment.Void{Suite: suite, Reason: reason[suite]})
	}
	if len(voided) == 0 {
		return nil
	}
	for i := range cases {
		suite, _, _ := strings.Cut(cases[i].Name, "/")
		if why := reason[suite]; why != "" {
			cases[i].Passed = false
			cases[i].Error = "suite voided: " + why
		}
	}
	return voided
}
