package ccompiler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler/fresh"
)

// freshSuite lists the fresh suite's cases by name only: their programs
// are generated per evaluation, once the compiler is built (fillFresh).
// gcc on the host is its oracle; without it the suite is missing.
func freshSuite() suite {
	s := suite{name: SuiteFresh}
	if _, err := exec.LookPath("gcc"); err != nil {
		s.missing = fmt.Errorf("%w: fresh: gcc, its oracle, is not on PATH", environment.ErrSuiteMissing)
		return s
	}
	for l := 1; l <= fresh.Levels; l++ {
		for k := 1; k <= fresh.PerLevel; k++ {
			s.cases = append(s.cases, testCase{
				name:  fmt.Sprintf("%s/level_%d/prog_%02d.c", SuiteFresh, l, k),
				group: fmt.Sprintf("level_%d", l),
			})
		}
	}
	return s
}

// fillFresh gives the fresh cases among cases their programs, generated
// from fresh.Seed(o.Secret, digest) with digest o.Digest, or else the
// digest of the compiler in ws (./cc, read without following a link).
// A case whose program the oracle dropped on every attempt is left out
// (never seen). Other cases are returned as they are.
func fillFresh(ctx context.Context, cases []testCase, ws string, o environment.RunOptions) ([]testCase, error) {
	prefix := SuiteFresh + "/"
	if !hasFresh(cases) {
		return cases, nil
	}
	digest := o.Digest
	if digest == "" {
		digest = compilerDigest(ws)
	}
	progs, err := fresh.Generate(ctx, fresh.Seed(o.Secret, digest), fresh.Options{})
	if err != nil {
		return nil, fmt.Errorf("generate the fresh programs: %w", err)
	}
	byName := make(map[string]fresh.Program, len(progs))
	for _, p := range progs {
		byName[prefix+p.Name] = p
	}
	out := make([]testCase, 0, len(cases))
	for _, c := range cases {
		if strings.HasPrefix(c.name, prefix) {
			p, ok := byName[c.name]
			if !ok {
				continue
			}
			c.sources = []string{path.Base(c.name)}
			c.generated = [][]byte{[]byte(p.Source)}
			c.exitCode, c.stdout = intp(p.ExitCode), strp(p.Stdout)
		}
		out = append(out, c)
	}
	return out, nil
}

func hasFresh(cases []testCase) bool {
	for _, c := range cases {
		if strings.HasPrefix(c.name, SuiteFresh+"/") {
			return true
		}
	}
	return false
}

// compilerDigest is SHA-256 of ws/cc's bytes, read through an os.Root
// (the built tree is untrusted: no link is followed), or a mark saying
// why there is none.
func compilerDigest(ws string) string {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "cc:unreadable"
	}
	defer root.Close()
	if st, err := root.Lstat("cc"); err != nil || !st.Mode().IsRegular() {
		return "cc:not-a-file"
	}
	f, err := root.Open("cc")
	if err != nil {
		return "cc:unreadable"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "cc:unreadable"
	}
	return "cc:" + hex.EncodeToString(h.Sum(nil))
}
