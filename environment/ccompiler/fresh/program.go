package fresh

import (
	"fmt"
	mrand "math/rand/v2"
	"strings"
)

// A program's file-scope names are written with a leading '@' (never in
// C otherwise): render drops it for the compiler under test and the
// oracle replaces it with a per-program prefix, so many programs link
// into one oracle executable.
const sigil = "@"

// render returns src with its file-scope names prefixed by prefix (main
// included when prefix is not empty).
func render(src, prefix string) string {
	return strings.ReplaceAll(src, sigil, prefix)
}

// writer builds a program's text.
type writer struct {
	g      *exprGen
	b      strings.Builder
	indent int
	// fresh numbers new local names.
	fresh int
	// inFunc: writing a function other than main.
	inFunc bool
	// iters is the product of the bounds of the loops enclosing the
	// statement being written: loops nest only while it stays small.
	iters int
}

func (w *writer) line(format string, args ...any) {
	w.b.WriteString(strings.Repeat("    ", w.indent))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

func (w *writer) name(prefix string) string {
	w.fresh++
	return fmt.Sprintf("%s%d", prefix, w.fresh)
}

// local is an assignable int variable (or field, or element by constant
// index, or *pointer) of the function being written.
type local struct{ lv string }

// body holds what statements may read and assign.
type body struct {
	sc      scope
	assign  []local
	arrs    []array  // arrays whose elements may be assigned
	actions []string // statement templates: calls of functions with effects (level 4), "%s" gets an expression
}

// clone copies b so a nested block's declarations stay in the block.
func (b *body) clone() *body {
	c := *b
	c.sc.vals = append([]operand(nil), b.sc.vals...)
	c.sc.arrs = append([]array(nil), b.sc.arrs...)
	c.assign = append([]local(nil), b.assign...)
	return &c
}

// declare adds an int local initialised with an expression of b.
func (w *writer) declare(b *body) {
	v := w.name("v")
	e := w.g.store(w.g.expr(&b.sc, 2))
	w.line("int %s = %s;", v, e.text)
	b.sc.vals = append(b.sc.vals, operand{v, stored})
	b.assign = append(b.assign, local{v})
}

// stmts writes n statements of b's level.
func (w *writer) stmts(b *body, n int, depth int) {
	for range n {
		w.stmt(b, depth)
	}
}

func (w *writer) stmt(b *body, depth int) {
	k := w.g.intn(10)
	switch {
	case k < 2 && depth > 0:
		w.ifElse(b, depth)
	case k < 4 && depth > 0 && w.iters < 64:
		w.loop(b, depth)
	case k < 5 && len(b.actions) > 0:
		act := b.actions[w.g.intn(len(b.actions))]
		w.line(act, w.g.store(w.g.expr(&b.sc, 1)).text)
	case k < 7 && len(b.arrs) > 0:
		a := b.arrs[w.g.intn(len(b.arrs))]
		w.line("%s[%s] = %s;", a.name, w.g.index(&b.sc, a.n), w.g.store(w.g.expr(&b.sc, 2)).text)
	default:
		if len(b.assign) == 0 {
			w.declare(b)
			return
		}
		lv := b.assign[w.g.intn(len(b.assign))]
		w.line("%s = %s;", lv.lv, w.g.store(w.g.expr(&b.sc, 3)).text)
	}
}

func (w *writer) ifElse(b *body, depth int) {
	c := w.g.expr(&b.sc, 2)
	w.line("if (%s) {", bare(c.text))
	w.block(b, 1+w.g.intn(2), depth-1)
	if w.g.intn(2) == 0 {
		w.line("} else {")
		w.block(b, 1+w.g.intn(2), depth-1)
	}
	w.line("}")
}

// block writes n statements in a nested block.
func (w *writer) block(b *body, n, depth int) {
	w.indent++
	w.stmts(b.clone(), n, depth)
	w.indent--
}

// loop writes a for or a while loop with a constant trip count and a
// counter the body reads but never assigns.
func (w *writer) loop(b *body, depth int) {
	n := 2 + w.g.intn(9)
	i := w.name("i")
	inner := b.clone()
	inner.sc.vals = append(inner.sc.vals, operand{i, span{0, int64(n - 1)}})
	saved := w.iters
	w.iters = max(1, w.iters) * n
	if w.inFunc {
		inner.sc.calls = nil // a call in a function's loop would multiply loops
	}
	defer func() { w.iters = saved }()
	if w.g.intn(2) == 0 {
		w.line("for (int %s = 0; %s < %d; %s = %s + 1) {", i, i, n, i, i)
		w.block(inner, 1+w.g.intn(3), depth-1)
		w.line("}")
		return
	}
	w.line("int %s = 0;", i)
	w.line("while (%s < %d) {", i, n)
	w.block(inner, 1+w.g.intn(3), depth-1)
	w.indent++
	w.line("%s = %s + 1;", i, i)
	w.indent--
	w.line("}")
}

// checksum returns an expression combining every value of sc, reduced
// to ±bound.
func (w *writer) checksum(sc *scope) string {
	terms := []string{}
	for i, v := range sc.vals {
		terms = append(terms, fmt.Sprintf("%s * %d", paren(v.text), 1+(i*7)%13))
	}
	if len(terms) == 0 {
		return fmt.Sprint(1 + w.g.intn(200))
	}
	// Each term is within ±bound·13; keep the sum within ±limit.
	var parts []string
	for len(terms) > 0 {
		n := min(len(terms), 8)
		parts = append(parts, "("+strings.Join(terms[:n], " + ")+") % 1000")
		terms = terms[n:]
	}
	return "(" + strings.Join(parts, " + ") + ") % 1000"
}

// generate writes one program of level (1..4) from r.
func generate(level int, r *mrand.Rand) string {
	w := &writer{g: &exprGen{r: r, ternary: level >= 2}}
	switch level {
	case 1:
		w.level1()
	case 2:
		w.level2()
	case 3:
		w.level3()
	default:
		w.level4()
	}
	return w.b.String()
}

// level1: one integer expression of constants in return.
func (w *writer) level1() {
	// At least one operator: a bare constant could be a public case's
	// very text (wacct's return_2.c).
	e := w.g.expr(&scope{}, 2+w.g.intn(3))
	for !strings.ContainsAny(e.text, "+-*/%<>=!&|^~") {
		e = w.g.expr(&scope{}, 2+w.g.intn(3))
	}
	w.line("int %smain(void) {", sigil)
	w.line("    return %s;", bare(e.text))
	w.line("}")
}

// level2: int locals, assignments, if/else, for and while loops.
func (w *writer) level2() {
	w.line("int %smain(void) {", sigil)
	w.indent++
	b := &body{}
	for range 2 + w.g.intn(3) {
		w.declare(b)
	}
	w.stmts(b, 3+w.g.intn(4), 2)
	w.line("return %s;", w.checksum(&b.sc))
	w.indent--
	w.line("}")
}
