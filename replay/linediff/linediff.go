// Package linediff is the line diff of every reader that shows or counts
// what a checkpoint changed (the viewer's diffs and added lines, the
// export's line counts), with its work bounded.
//
// A line diff costs O((N+M)·D) for N and M lines and D lines changed
// (Myers); an agent chooses D. One part that rewrote a 160,000-line file
// as a permutation of its lines cost go-git's diff (diffmatchpatch with a
// one-hour timeout) 124 s of CPU in the viewer and 134 s in the Parquet
// export. Here every diff has a budget of work (diagonals visited and
// lines compared, counted, never timed): common prefix and suffix are
// trimmed first (linear), lines that occur on one side only are changes
// without search (as git's xdiff does), and the rest is Myers' linear-space
// bisection, as diffmatchpatch does it. When the budget runs out, what is
// left unresolved is reported as removed whole and added whole: the diff
// stays a correct one (applying it gives the new text) but not a minimal
// one, and Result.TooLarge says so, so a reader can label it ("too large
// to diff") instead of showing hunks. git's own heuristics make the same
// trade (xdiff stops searching past a cost of about sqrt(N) diagonals and
// takes a non-minimal path) and answer such a file in about a second.
package linediff

import (
	"context"
	"strings"
)

// DefaultBudget is the work one diff may do unless told otherwise: about
// 0.1 to 0.3 s of CPU. Honest checkpoints need a tiny fraction of it (an
// agent's rewrite of a 2,000-line file takes about 1 % of it).
const DefaultBudget = 50_000_000

// Op is what a Chunk does.
type Op int8

const (
	Equal Op = iota
	Delete
	Insert
)

// Chunk is a run of whole lines (each with its "\n", but perhaps the
// last) with one Op.
type Chunk struct {
	Op   Op
	Text string
}

// Result is a diff of two texts.
type Result struct {
	Chunks []Chunk
	// Added and Removed count the lines inserted and deleted.
	Added, Removed int
	// TooLarge: the budget ran out (or ctx ended) and some of the old
	// text is reported removed whole and some of the new added whole,
	// where a smaller diff exists.
	TooLarge bool
	// Work is what the diff cost in budget units.
	Work int
}

// Lines diffs a and b line by line within budget units of work (<= 0:
// DefaultBudget). A cancelled ctx ends the search as the budget does.
func Lines(ctx context.Context, a, b string, budget int) Result {
	if budget <= 0 {
		budget = DefaultBudget
	}
	la, lb := split(a), split(b)
	ids := make(map[string]int32, len(la)+len(lb))
	ia, ib := intern(la, ids), intern(lb, ids)
	// A line whose text the other side lacks is a change whatever the
	// diff (xdiff's cleanup): only the others are searched.
	inA, inB := make([]bool, len(ids)), make([]bool, len(ids))
	for _, id := range ia {
		inA[id] = true
	}
	for _, id := range ib {
		inB[id] = true
	}
	delA, insB := make([]bool, len(ia)), make([]bool, len(ib))
	fa, ma := keep(ia, inB, delA)
	fb, mb := keep(ib, inA, insB)
	d := &differ{ctx: ctx, budget: budget, a: fa, b: fb}
	d.spend(len(ia) + len(ib))
	d.diff(0, len(fa), 0, len(fb))
	for _, e := range d.out {
		for i := 0; i < e.n; i++ {
			switch e.op {
			case Delete:
				delA[ma[e.a0+i]] = true
			case Insert:
				insB[mb[e.b0+i]] = true
			}
		}
	}
	res := Result{TooLarge: d.over, Work: d.work}
	// The unchanged lines of both sides pair in order; between them come
	// the removed lines, then the added ones (as diff tools print them).
	var eq, del, ins strings.Builder
	add := func(op Op, sb *strings.Builder) {
		if sb.Len() > 0 {
			res.Chunks = append(res.Chunks, Chunk{op, sb.String()})
			sb.Reset()
		}
	}
	i, j := 0, 0
	for i < len(la) || j < len(lb) {
		if (i < len(la) && delA[i]) || (j < len(lb) && insB[j]) {
			add(Equal, &eq)
			for ; i < len(la) && delA[i]; i++ {
				del.WriteString(la[i])
				res.Removed++
			}
			for ; j < len(lb) && insB[j]; j++ {
				ins.WriteString(lb[j])
				res.Added++
			}
			add(Delete, &del)
			add(Insert, &ins)
			continue
		}
		eq.WriteString(la[i])
		i++
		j++
	}
	add(Equal, &eq)
	return res
}

// keep returns the ids that other holds and each one's index in ids,
// marking the others in changed.
func keep(ids []int32, other []bool, changed []bool) ([]int32, []int) {
	f, m := make([]int32, 0, len(ids)), make([]int, 0, len(ids))
	for i, id := range ids {
		if other[id] {
			f, m = append(f, id), append(m, i)
		} else {
			changed[i] = true
		}
	}
	return f, m
}

// Count is Lines without the chunks: the lines added and removed.
func Count(ctx context.Context, a, b string, budget int) (added, removed int, tooLarge bool) {
	r := Lines(ctx, a, b, budget)
	return r.Added, r.Removed, r.TooLarge
}

// split cuts s into lines, each keeping its "\n".
func split(s string) []string {
	if s == "" {
		return nil
	}
	out := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func intern(lines []string, ids map[string]int32) []int32 {
	out := make([]int32, len(lines))
	for i, l := range lines {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		out[i] = id
	}
	return out
}

// edit is a run of n lines at a0 (old) and b0 (new).
type edit struct {
	op     Op
	a0, b0 int
	n      int
}

type differ struct {
	ctx          context.Context
	a, b         []int32
	budget, work int
	over         bool
	out          []edit
	v1, v2       []int
}

func (d *differ) emit(op Op, a0, b0, n int) {
	if n == 0 {
		return
	}
	if k := len(d.out) - 1; k >= 0 && d.out[k].op == op {
		e := &d.out[k]
		if (op == Equal && e.a0+e.n == a0 && e.b0+e.n == b0) || (op == Delete && e.a0+e.n == a0) || (op == Insert && e.b0+e.n == b0) {
			e.n += n
			return
		}
	}
	d.out = append(d.out, edit{op, a0, b0, n})
}

// spend charges n units and says whether the budget still holds; it
// looks at ctx every million units.
func (d *differ) spend(n int) bool {
	before := d.work
	d.work += n
	if d.work/1_000_000 != before/1_000_000 && d.ctx.Err() != nil {
		d.over = true
	}
	if d.work > d.budget {
		d.over = true
	}
	return !d.over
}

// diff emits the edits from a[a0:a1] to b[b0:b1], in order.
func (d *differ) diff(a0, a1, b0, b1 int) {
	// Common prefix and suffix.
	p := 0
	for a0+p < a1 && b0+p < b1 && d.a[a0+p] == d.b[b0+p] {
		p++
	}
	s := 0
	for a1-s > a0+p && b1-s > b0+p && d.a[a1-s-1] == d.b[b1-s-1] {
		s++
	}
	d.spend(p + s)
	d.emit(Equal, a0, b0, p)
	a0, b0 = a0+p, b0+p
	a1, b1 = a1-s, b1-s
	switch {
	case a0 == a1:
		d.emit(Insert, a0, b0, b1-b0)
	case b0 == b1:
		d.emit(Delete, a0, b0, a1-a0)
	case d.over:
		d.emit(Delete, a0, b0, a1-a0)
		d.emit(Insert, a1, b0, b1-b0)
	default:
		if x, y, ok := d.bisect(a0, a1, b0, b1); ok {
			d.diff(a0, x, b0, y)
			d.diff(x, a1, y, b1)
		} else {
			d.emit(Delete, a0, b0, a1-a0)
			d.emit(Insert, a1, b0, b1-b0)
		}
	}
	d.emit(Equal, a1, b1, s)
}

// bisect finds the middle snake of a[a0:a1] → b[b0:b1] (Myers 1986,
// diffmatchpatch's diffBisect) and returns where to split; false when the
// budget ran out first.
func (d *differ) bisect(a0, a1, b0, b1 int) (int, int, bool) {
	n, m := a1-a0, b1-b0
	maxD := (n + m + 1) / 2
	off := maxD
	vlen := 2 * maxD
	if cap(d.v1) < vlen+2 {
		d.v1, d.v2 = make([]int, vlen+2), make([]int, vlen+2)
	}
	v1, v2 := d.v1[:vlen+2], d.v2[:vlen+2]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	if !d.spend(vlen) {
		return 0, 0, false
	}
	delta := n - m
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for dd := 0; dd < maxD; dd++ {
		if !d.spend(2*dd + 2) {
			return 0, 0, false
		}
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			ko := off + k1
			var x int
			if k1 == -dd || (k1 != dd && v1[ko-1] < v1[ko+1]) {
				x = v1[ko+1]
			} else {
				x = v1[ko-1] + 1
			}
			y := x - k1
			x0 := x
			for x < n && y < m && d.a[a0+x] == d.b[b0+y] {
				x++
				y++
			}
			if !d.spend(x - x0) {
				return 0, 0, false
			}
			v1[ko] = x
			switch {
			case x > n:
				k1end += 2
			case y > m:
				k1start += 2
			case front:
				k2o := off + delta - k1
				if k2o >= 0 && k2o < vlen && v2[k2o] != -1 && x >= n-v2[k2o] {
					return a0 + x, b0 + y, true
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			ko := off + k2
			var x int
			if k2 == -dd || (k2 != dd && v2[ko-1] < v2[ko+1]) {
				x = v2[ko+1]
			} else {
				x = v2[ko-1] + 1
			}
			y := x - k2
			x0 := x
			for x < n && y < m && d.a[a1-x-1] == d.b[b1-y-1] {
				x++
				y++
			}
			if !d.spend(x - x0) {
				return 0, 0, false
			}
			v2[ko] = x
			switch {
			case x > n:
				k2end += 2
			case y > m:
				k2start += 2
			case !front:
				k1o := off + delta - k2
				if k1o >= 0 && k1o < vlen && v1[k1o] != -1 {
					x1 := v1[k1o]
					y1 := off + x1 - k1o
					if x1 >= n-x {
						return a0 + x1, b0 + y1, true
					}
				}
			}
		}
	}
	// No commonality at all: a whole replacement is the diff.
	return 0, 0, false
}
