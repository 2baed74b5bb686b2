package linediff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// sides rebuilds the old and new texts from a result.
func sides(r Result) (string, string) {
	var a, b strings.Builder
	for _, c := range r.Chunks {
		if c.Op != Insert {
			a.WriteString(c.Text)
		}
		if c.Op != Delete {
			b.WriteString(c.Text)
		}
	}
	return a.String(), b.String()
}

func lines(rng *rand.Rand, n, alphabet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %d\n", rng.IntN(alphabet))
	}
	return out
}

// TestMinimalAsMyers: on random texts the diff rebuilds both sides,
// changes as few lines as the LCS table says and never more than go-git's
// diff (diffmatchpatch, whose speedups are not always minimal).
func TestMinimalAsMyers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 400; round++ {
		a := lines(rng, rng.IntN(60), 1+rng.IntN(12))
		b := append([]string(nil), a...)
		for k := rng.IntN(8); k > 0 && len(b) > 0; k-- {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b = append(b[:i], b[i+1:]...)
			case 1:
				b = append(b[:i], append([]string{fmt.Sprintf("new %d\n", rng.IntN(5))}, b[i:]...)...)
			default:
				b[i] = fmt.Sprintf("line %d\n", rng.IntN(12))
			}
		}
		as, bs := strings.Join(a, ""), strings.Join(b, "")
		if rng.IntN(4) == 0 {
			bs = strings.TrimSuffix(bs, "\n") // a last line without its newline
		}
		r := Lines(context.Background(), as, bs, 0)
		if ga, gb := sides(r); ga != as || gb != bs {
			t.Fatalf("round %d: rebuilt sides differ\n%q\n%q", round, as, bs)
		}
		var add, del int
		for _, d := range diff.Do(as, bs) {
			n := strings.Count(d.Text, "\n")
			if d.Text != "" && !strings.HasSuffix(d.Text, "\n") {
				n++
			}
			switch d.Type {
			case diffmatchpatch.DiffInsert:
				add += n
			case diffmatchpatch.DiffDelete:
				del += n
			}
		}
		if r.Added+r.Removed > add+del {
			t.Fatalf("round %d: +%d -%d, more than go-git's +%d -%d", round, r.Added, r.Removed, add, del)
		}
		add, del = minimal(split(as), split(bs))
		if r.TooLarge || r.Added+r.Removed != add+del {
			t.Fatalf("round %d: +%d -%d (too large %v), go-git +%d -%d\n%q\n%q", round, r.Added, r.Removed, r.TooLarge, add, del, as, bs)
		}
	}
}

// minimal is the smallest line diff's counts, by the textbook LCS table.
func minimal(a, b []string) (add, del int) {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return len(b) - t[0][0], len(a) - t[0][0]
}

// permuted is the adversarial checkpoint: a file of n distinct lines
// rewritten as a random permutation of them (go-git's diff: 124 s of CPU
// at 160,000 lines).
func permuted(n int) (string, string) {
	rng := rand.New(rand.NewPCG(9, 9))
	a := make([]string, n)
	for i := range a {
		a[i] = fmt.Sprintf("int v%d = %d;\n", i, i*7)
	}
	b := append([]string(nil), a...)
	rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	return strings.Join(a, ""), strings.Join(b, "")
}

// TestPermutedRewriteBounded: the 160,000-line permutation stops at the
// budget, says it is too large, and is still a correct diff.
func TestPermutedRewriteBounded(t *testing.T) {
	a, b := permuted(160_000)
	r := Lines(context.Background(), a, b, 0)
	if !r.TooLarge {
		t.Fatalf("a permuted 160,000-line file is not marked too large (work %d)", r.Work)
	}
	if r.Work > DefaultBudget+2*(160_000*2) {
		t.Fatalf("work %d, budget %d", r.Work, DefaultBudget)
	}
	if ga, gb := sides(r); ga != a || gb != b {
		t.Fatal("the bounded diff does not rebuild both sides")
	}
	if r.Added != 160_000 || r.Removed != 160_000 {
		t.Errorf("+%d -%d, want the whole file replaced", r.Added, r.Removed)
	}
}

// TestHonestEditsCheap: an agent's edits to a 5,000-line file (thirty
// places changed, a block moved, new lines) cost a small share of the
// budget and are exact.
func TestHonestEditsCheap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := make([]string, 5000)
	for i := range a {
		a[i] = fmt.Sprintf("\tx%d = f(x%d); /* %d */\n", i, i%97, i%13)
	}
	b := append([]string(nil), a...)
	for k := 0; k < 30; k++ {
		i := rng.IntN(len(b))
		b[i] = fmt.Sprintf("\ty%d = g(%d);\n", k, k)
	}
	block := append([]string(nil), b[1000:1200]...)
	b = append(b[:1000], b[1200:]...)
	b = append(b[:3000], append(block, b[3000:]...)...)
	r := Lines(context.Background(), strings.Join(a, ""), strings.Join(b, ""), 0)
	if r.TooLarge || r.Work > DefaultBudget/20 {
		t.Fatalf("honest edits: too large %v, work %d of %d", r.TooLarge, r.Work, DefaultBudget)
	}
	if r.Added > 260 || r.Removed > 260 {
		t.Errorf("+%d -%d for 30 changed lines and a 200-line move", r.Added, r.Removed)
	}
}

// TestNewContentFree: a rewrite with nothing in common costs no search.
func TestNewContentFree(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&a, "old %d\n", i)
		fmt.Fprintf(&b, "new %d\n", i)
	}
	r := Lines(context.Background(), a.String(), b.String(), 0)
	if r.TooLarge || r.Added != 100_000 || r.Removed != 100_000 || r.Work > 1_000_000 {
		t.Fatalf("+%d -%d too large %v work %d", r.Added, r.Removed, r.TooLarge, r.Work)
	}
}

// TestCancelled: a cancelled context ends the search like the budget.
func TestCancelled(t *testing.T) {
	a, b := permuted(20_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Lines(ctx, a, b, 1<<40)
	if !r.TooLarge || r.Work > 3_000_000 {
		t.Fatalf("cancelled: too large %v, work %d", r.TooLarge, r.Work)
	}
}

// BenchmarkPermuted measures the bounded diff of the adversarial file.
func BenchmarkPermuted(b *testing.B) {
	x, y := permuted(160_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := Lines(context.Background(), x, y, 0)
		b.ReportMetric(float64(r.Work), "work")
	}
}
