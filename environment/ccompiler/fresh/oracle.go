package fresh

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/trajlab/traj/sandbox/xec"
)

// The oracle is gcc on the host. The programs are ours (trusted), so it
// runs them on the host too, through xec with timeouts. To pay gcc's
// start-up and link once rather than per program, the generated programs
// of one round are compiled together: each with its file-scope names
// prefixed (render), and a driver main printing what each one's main
// returns. It is built twice, -O0 and -O2, and a program counts only
// when both agree.

const outputLimit = 1 << 20

func sortPrograms(ps []Program) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Level != ps[j].Level {
			return ps[i].Level < ps[j].Level
		}
		return ps[i].Name < ps[j].Name
	})
}

// judge generates the sources of slots and runs them through the oracle:
// the programs it keeps, and the slots it drops.
func judge(ctx context.Context, seed []byte, slots []slot, o Options) ([]Program, []slot, error) {
	dir, err := os.MkdirTemp(o.TempDir, "traj-fresh-")
	if err != nil {
		return nil, nil, fmt.Errorf("fresh oracle folder: %w", err)
	}
	defer os.RemoveAll(dir)
	return judgeBatch(ctx, dir, seed, slots, o)
}

// judgeBatch is the oracle for generated programs (levels 1..4).
func judgeBatch(ctx context.Context, dir string, seed []byte, slots []slot, o Options) ([]Program, []slot, error) {
	if len(slots) == 0 {
		return nil, nil, nil
	}
	srcs := make([]string, len(slots))
	for i, s := range slots {
		srcs[i] = candidate(seed, s)
	}
	// A program gcc refuses would fail the whole batch: find it alone
	// (never seen: the generator writes valid C) and drop it.
	live := make([]int, 0, len(slots))
	var dropped []slot
	for i := range slots {
		live = append(live, i)
	}
	var res map[int][2]int
	for {
		var err error
		var refused []int
		res, refused, err = runBatch(ctx, dir, srcs, live, o)
		if err != nil {
			return nil, nil, err
		}
		if len(refused) == 0 {
			break
		}
		for _, i := range refused {
			dropped = append(dropped, slots[i])
		}
		live = without(live, refused)
	}
	var kept []Program
	for _, i := range live {
		r, ok := res[i]
		code := r[0] & 255
		if !ok || r[0] != r[1] || code == 0 {
			dropped = append(dropped, slots[i])
			continue
		}
		s := slots[i]
		kept = append(kept, Program{Name: s.name(), Level: s.level, Source: render(srcs[i], ""), ExitCode: code})
	}
	return kept, dropped, nil
}

func without(xs, drop []int) []int {
	out := xs[:0:0]
	for _, x := range xs {
		found := false
		for _, d := range drop {
			found = found || d == x
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

// runBatch compiles the programs live together at -O0 and -O2 and runs
// both: each program's main's value at both levels (absent when the run
// did not reach it). When the batch does not compile, refused are the
// programs gcc refuses alone.
func runBatch(ctx context.Context, dir string, srcs []string, live []int, o Options) (map[int][2]int, []int, error) {
	src := filepath.Join(dir, "batch.c")
	if err := os.WriteFile(src, []byte(batchSource(srcs, live)), 0o644); err != nil {
		return nil, nil, fmt.Errorf("write the fresh oracle's source: %w", err)
	}
	opt := []string{"-O0", "-O2"}
	var comp [2]xec.Result
	var cerr [2]error
	var wg sync.WaitGroup
	for k := range opt {
		wg.Go(func() {
			comp[k], cerr[k] = xec.Run(ctx, xec.Command{Path: o.GCC, Args: []string{"-w", opt[k], "-o", filepath.Join(dir, "batch"+opt[k]), src},
				Dir: dir, Timeout: o.Timeout, OutputLimit: outputLimit})
		})
	}
	wg.Wait()
	for k := range opt {
		if cerr[k] != nil {
			return nil, nil, fmt.Errorf("fresh oracle: gcc %s: %w", opt[k], cerr[k])
		}
		if comp[k].ExitCode != 0 || comp[k].TimedOut {
			refused, err := refusedAlone(ctx, dir, srcs, live, o)
			if err != nil {
				return nil, nil, err
			}
			if len(refused) == 0 {
				return nil, nil, fmt.Errorf("fresh oracle: gcc %s refused the batch but no program alone: %s", opt[k], comp[k].Stderr)
			}
			return nil, refused, nil
		}
	}
	res := map[int][2]int{}
	var seen [2]map[int]int
	for k := range opt {
		run, err := xec.Run(ctx, xec.Command{Path: filepath.Join(dir, "batch"+opt[k]), Dir: dir, Timeout: o.Timeout, OutputLimit: outputLimit})
		if err != nil {
			return nil, nil, fmt.Errorf("fresh oracle: run the %s batch: %w", opt[k], err)
		}
		seen[k] = parseBatch(run.Stdout)
	}
	for i, v := range seen[0] {
		if w, ok := seen[1][i]; ok {
			res[i] = [2]int{v, w}
		}
	}
	return res, nil, nil
}

// batchSource is the programs live of srcs in one file, each with its
// file-scope names prefixed, and a main printing "index value" for each
// program's main, flushed, in order.
func batchSource(srcs []string, live []int) string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n\n")
	for _, i := range live {
		fmt.Fprintf(&b, "/* program %d */\n%s\n", i, render(srcs[i], prefix(i)))
	}
	b.WriteString("int main(void) {\n")
	for _, i := range live {
		fmt.Fprintf(&b, "    printf(\"%d %%d\\n\", %smain());\n    fflush(stdout);\n", i, prefix(i))
	}
	b.WriteString("    return 0;\n}\n")
	return b.String()
}

func prefix(i int) string { return "p" + strconv.Itoa(i) + "_" }

// parseBatch reads the driver's "index value" lines.
func parseBatch(out string) map[int]int {
	m := map[int]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		i, err1 := strconv.Atoi(f[0])
		v, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			m[i] = v
		}
	}
	return m
}

// refusedAlone checks each program of live alone (gcc -fsyntax-only).
func refusedAlone(ctx context.Context, dir string, srcs []string, live []int, o Options) ([]int, error) {
	var out []int
	for _, i := range live {
		p := filepath.Join(dir, fmt.Sprintf("alone%d.c", i))
		if err := os.WriteFile(p, []byte(render(srcs[i], "")), 0o644); err != nil {
			return nil, fmt.Errorf("write a fresh program: %w", err)
		}
		r, err := xec.Run(ctx, xec.Command{Path: o.GCC, Args: []string{"-w", "-fsyntax-only", p}, Dir: dir, Timeout: o.Timeout, OutputLimit: outputLimit})
		if err != nil {
			return nil, fmt.Errorf("fresh oracle: gcc: %w", err)
		}
		if r.ExitCode != 0 || r.TimedOut {
			out = append(out, i)
		}
	}
	return out, nil
}
