package ccompiler

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// gccOutcome is what gcc's build of a case's sources did: whether it
// compiled, and the program's exit code and output.
type gccOutcome struct {
	compiled bool
	exit     int
	out      string
}

// gccRun compiles srcs (written in a fresh folder with support) with gcc
// and runs the program.
func gccRun(t *testing.T, dir string, srcs map[string][]byte, order []string, combine bool) gccOutcome {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var args []string
	for name, data := range srcs {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range order {
		args = append(args, filepath.Join(dir, n))
	}
	prog := filepath.Join(dir, "prog")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "gcc", append(append([]string{"-w"}, args...), "-o", prog)...).Run(); err != nil {
		return gccOutcome{}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	cmd := exec.CommandContext(rctx, prog)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if combine {
		cmd.Stderr = &out
	}
	err := cmd.Run()
	o := gccOutcome{compiled: true, out: out.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		o.exit = ee.ExitCode()
	} else if err != nil {
		o.exit = -1
	}
	return o
}

// The nonce keeps each case's meaning: with gcc, every runnable case of
// basics and of the public suites present (TRAJ_TESTS_DIR) that passes
// as written passes rewritten with its nonce ((E+K) mod 256, the same
// output), unless it is listed in untransformable or cannot be rewritten
// at all (then it runs unguarded, which guard.go scores apart). The
// counts are logged: on the full public suites they are in
// untransformable.go's history.
func TestNonceKeepsMeaning(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	env, err := New(Config{TestsDir: os.Getenv("TRAJ_TESTS_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("a fixed test secret")
	var cases []testCase
	for _, name := range env.order {
		if name == SuiteTortureStd {
			continue
		}
		cases = append(cases, env.suites[name].cases...)
	}
	type verdict struct {
		name, why string
	}
	var (
		mu                                  sync.Mutex
		bad                                 []verdict
		runnable, guarded, origPass, kept   int
		unguardedByRule, listedStillPassing int
	)
	tmp := t.TempDir()
	next := make(chan int)
	var wg sync.WaitGroup
	workers := runtime.NumCPU()
	if w, err := strconv.Atoi(os.Getenv("TRAJ_NONCE_WORKERS")); err == nil && w > 0 {
		workers = w
	}
	for range workers {
		wg.Go(func() {
			for i := range next {
				tc := cases[i]
				if tc.expectReject || tc.exitCode == nil {
					continue
				}
				files := func(c testCase) (map[string][]byte, []string) {
					m := map[string][]byte{}
					var order []string
					for j, src := range c.sources {
						data, err := env.source(c, j)
						if err != nil {
							t.Error(err)
						}
						n := strconv.Itoa(j) + "_" + filepath.Base(src)
						m[n] = data
						order = append(order, n)
					}
					for j, s := range c.support {
						data, _ := os.ReadFile(s)
						if c.supportGen != nil {
							data = c.supportGen[j]
						}
						m[filepath.Base(s)] = data
					}
					return m, order
				}
				m, order := files(tc)
				want := *tc.exitCode
				o := gccRun(t, filepath.Join(tmp, "o"+strconv.Itoa(i)), m, order, tc.combineStderr)
				passes := o.compiled && o.exit == want && (tc.stdout == nil || o.out == *tc.stdout)
				g, err := env.guardOf(tc, secret)
				if err != nil {
					t.Error(err)
					continue
				}
				listed := untransformable[canonicalName(tc.name)] != ""
				mu.Lock()
				runnable++
				if passes {
					origPass++
				}
				mu.Unlock()
				if g.nonce == 0 {
					mu.Lock()
					if !listed {
						unguardedByRule++
						t.Logf("unguarded (the rewrite cannot handle it): %s", tc.name)
					}
					mu.Unlock()
					if !listed || !passes {
						continue
					}
					// Listed: is it still untransformable?
					g.nonce = nonceFor(secret, tc.name, want)
					gen := make([][]byte, len(tc.sources))
					for j := range tc.sources {
						d, _ := env.source(tc, j)
						gen[j], _, _ = withNonce(d, g.nonce)
					}
					g.generated = gen
					for _, s := range tc.support {
						d, _ := os.ReadFile(s)
						d, _, _ = withNonce(d, g.nonce)
						g.supportGen = append(g.supportGen, d)
					}
					g.exitCode = intp((want + g.nonce) % 256)
				}
				gm, gorder := files(g)
				go2 := gccRun(t, filepath.Join(tmp, "g"+strconv.Itoa(i)), gm, gorder, tc.combineStderr)
				gpasses := go2.compiled && go2.exit == *g.exitCode && (tc.stdout == nil || go2.out == *tc.stdout)
				mu.Lock()
				switch {
				case listed && gpasses:
					listedStillPassing++
					bad = append(bad, verdict{tc.name, "listed as untransformable, but its rewrite passes"})
				case listed:
				case passes && !gpasses:
					why := "gcc passes it, not its rewrite"
					if !go2.compiled {
						why += " (the rewrite does not compile)"
					} else {
						why += " (exit " + strconv.Itoa(go2.exit) + ", want " + strconv.Itoa(*g.exitCode) + ")"
					}
					bad = append(bad, verdict{tc.name, why})
				case !passes && gpasses:
					bad = append(bad, verdict{tc.name, "gcc fails it, but passes its rewrite"})
				default:
					guarded++
					if passes {
						kept++
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	sort.Slice(bad, func(i, j int) bool { return bad[i].name < bad[j].name })
	for _, b := range bad {
		t.Errorf("%s: %s", b.name, b.why)
	}
	t.Logf("%d runnable cases: gcc passes %d as written; %d guarded (%d of them passed by gcc, rewritten too); %d unguarded by rule, %d listed untransformable",
		runnable, origPass, guarded, kept, unguardedByRule, len(untransformable))
}
