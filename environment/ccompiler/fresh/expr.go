package fresh

import (
	"fmt"
	mrand "math/rand/v2"
)

// Every value a program stores (a variable, an array element, a field, a
// parameter, a return value) lies in [-bound, bound]; every intermediate
// value of an expression lies in [-limit, limit], far from int's range.
// The generator proves both with interval arithmetic as it writes each
// expression, so no program overflows whatever its loops do.
const (
	bound = 999
	limit = 1 << 28
)

// span is the interval of values an expression can take.
type span struct{ lo, hi int64 }

func (s span) within(lo, hi int64) bool { return s.lo >= lo && s.hi <= hi }
func (s span) nonneg() bool             { return s.lo >= 0 }
func (s span) has0() bool               { return s.lo <= 0 && s.hi >= 0 }
func (s span) mag() int64               { return max(abs(s.lo), abs(s.hi)) }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

var stored = span{-bound, bound}

// operand is an expression's text and its span. Expressions have no side
// effects: the functions they call are pure (generator rule), so C's
// unspecified order of evaluation never changes a result.
type operand struct {
	text string
	sp   span
}

// scope is what an expression may read.
type scope struct {
	vals  []operand // variables, parameters, loop counters, fields, elements by constant index
	arrs  []array   // arrays indexable by a masked expression
	calls []fn      // pure functions callable in expressions
}

// array is an int array (or a pointer to its first element) of size n, a
// power of two, so `x & (n-1)` is always a valid index.
type array struct {
	name string
	n    int
}

// fn is a pure int function of nargs int parameters.
type fn struct {
	name  string
	nargs int
}

// exprGen writes expressions from a scope with a seeded source.
type exprGen struct {
	r *mrand.Rand
	// ternary allows c ? a : b (levels 2 and up).
	ternary bool
}

func (g *exprGen) intn(n int) int { return g.r.IntN(n) }

// leaf is a constant or something readable in sc.
func (g *exprGen) leaf(sc *scope) operand {
	n := len(sc.vals)
	switch {
	case n > 0 && g.intn(3) > 0:
		return sc.vals[g.intn(n)]
	case len(sc.arrs) > 0 && g.intn(4) == 0:
		a := sc.arrs[g.intn(len(sc.arrs))]
		idx := g.index(sc, a.n)
		return operand{fmt.Sprintf("%s[%s]", a.name, idx), stored}
	default:
		c := int64(g.intn(100))
		if g.intn(4) == 0 {
			c = int64(g.intn(1000))
		}
		return operand{fmt.Sprint(c), span{c, c}}
	}
}

// index is an expression always in [0, n): a constant, or a masked
// expression (n is a power of two).
func (g *exprGen) index(sc *scope, n int) string {
	if g.intn(3) == 0 || len(sc.vals) == 0 {
		return fmt.Sprint(g.intn(n))
	}
	v := sc.vals[g.intn(len(sc.vals))]
	if v.sp.within(0, int64(n-1)) {
		return v.text
	}
	return fmt.Sprintf("(%s & %d)", v.text, n-1)
}

// expr is a random expression of at most depth levels of operators whose
// every intermediate value stays within ±limit.
func (g *exprGen) expr(sc *scope, depth int) operand {
	if depth <= 0 || g.intn(5) == 0 {
		return g.leaf(sc)
	}
	if len(sc.calls) > 0 && g.intn(5) == 0 {
		f := sc.calls[g.intn(len(sc.calls))]
		args := ""
		for i := range f.nargs {
			if i > 0 {
				args += ", "
			}
			args += g.store(g.expr(sc, depth-1)).text
		}
		return operand{fmt.Sprintf("%s(%s)", f.name, args), stored}
	}
	switch k := g.intn(20); {
	case k < 2:
		return g.unary(g.expr(sc, depth-1))
	case k < 3 && g.ternary:
		c, a, b := g.expr(sc, depth-1), g.expr(sc, depth-1), g.expr(sc, depth-1)
		return operand{fmt.Sprintf("(%s ? %s : %s)", c.text, a.text, b.text), span{min(a.sp.lo, b.sp.lo), max(a.sp.hi, b.sp.hi)}}
	default:
		return g.binary(g.expr(sc, depth-1), g.expr(sc, depth-1))
	}
}

func (g *exprGen) unary(a operand) operand {
	switch g.intn(3) {
	case 0:
		return operand{"-" + paren(a.text), span{-a.sp.hi, -a.sp.lo}}
	case 1:
		return operand{"~" + paren(a.text), span{-a.sp.hi - 1, -a.sp.lo - 1}}
	default:
		return operand{"!" + paren(a.text), span{0, 1}}
	}
}

// paren wraps text unless it is a bare name, number or call.
func paren(text string) string {
	for _, c := range text {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			if text[0] == '(' && matching(text) {
				return text
			}
			return "(" + text + ")"
		}
	}
	return text
}

// matching reports whether text's first '(' closes at its last byte.
func matching(text string) bool {
	d := 0
	for i, c := range text {
		switch c {
		case '(':
			d++
		case ')':
			d--
			if d == 0 {
				return i == len(text)-1
			}
		}
	}
	return false
}

// binaryOps weighs the operators: arithmetic most, so values stay varied
// rather than collapsing to the 0 and 1 of comparisons.
var binaryOps = []string{"+", "+", "+", "-", "-", "-", "*", "*", "*", "/", "%",
	"<", "<=", ">", ">=", "==", "!=", "&&", "||", "&", "|", "^", "<<", ">>"}

// binary combines a and b with a random operator, rewriting operands so
// the operation is defined (a non-zero divisor, non-negative bitwise and
// shifted operands, a small shift count) and falling back to + or a
// alone when the result could leave ±limit.
func (g *exprGen) binary(a, b operand) operand {
	op := binaryOps[g.intn(len(binaryOps))]
	var sp span
	switch op {
	case "+":
		sp = span{a.sp.lo + b.sp.lo, a.sp.hi + b.sp.hi}
	case "-":
		sp = span{a.sp.lo - b.sp.hi, a.sp.hi - b.sp.lo}
	case "*":
		p := []int64{a.sp.lo * b.sp.lo, a.sp.lo * b.sp.hi, a.sp.hi * b.sp.lo, a.sp.hi * b.sp.hi}
		sp = span{min(p[0], p[1], p[2], p[3]), max(p[0], p[1], p[2], p[3])}
	case "/", "%":
		if b.sp.has0() {
			b = operand{fmt.Sprintf("((%s & 7) + 1)", b.text), span{1, 8}}
		}
		m := a.sp.mag()
		if op == "%" {
			m = min(m, b.sp.mag()-1)
		}
		sp = span{-m, m}
		if a.sp.nonneg() && b.sp.nonneg() {
			sp.lo = 0
		}
	case "<", "<=", ">", ">=", "==", "!=", "&&", "||":
		sp = span{0, 1}
	case "&", "|", "^":
		a, b = g.mask(a), g.mask(b)
		hi := max(a.sp.hi, b.sp.hi)
		if op == "&" {
			hi = min(a.sp.hi, b.sp.hi)
		}
		sp = span{0, ones(hi)}
	case "<<", ">>":
		a = g.mask(a)
		c := int64(g.intn(6))
		if b.sp.within(0, 5) {
			c = b.sp.hi
		} else {
			b = operand{fmt.Sprint(c), span{c, c}}
		}
		sp = span{0, a.sp.hi}
		if op == "<<" {
			sp.hi = a.sp.hi << c
		}
	}
	if !sp.within(-limit, limit) {
		if op != "+" {
			return g.binary2("+", a, b)
		}
		return a
	}
	return operand{fmt.Sprintf("(%s %s %s)", a.text, op, b.text), sp}
}

// binary2 is a + b or a alone when even that could leave ±limit.
func (g *exprGen) binary2(op string, a, b operand) operand {
	sp := span{a.sp.lo + b.sp.lo, a.sp.hi + b.sp.hi}
	if !sp.within(-limit, limit) {
		return a
	}
	return operand{fmt.Sprintf("(%s %s %s)", a.text, op, b.text), sp}
}

// mask makes a non-negative: kept when it is, else a & 255 or a & 1023.
func (g *exprGen) mask(a operand) operand {
	if a.sp.nonneg() && a.sp.hi <= 1<<20 {
		return a
	}
	m := int64(255)
	if g.intn(2) == 0 {
		m = 1023
	}
	return operand{fmt.Sprintf("(%s & %d)", a.text, m), span{0, m}}
}

// ones is the smallest 2^k-1 ≥ v (v ≥ 0): the bound of a | b and a ^ b.
func ones(v int64) int64 {
	o := int64(0)
	for o < v {
		o = o<<1 | 1
	}
	return o
}

// store is a fit to be stored: a itself when it lies within ±bound, else
// a % 1000.
func (g *exprGen) store(a operand) operand {
	if a.sp.within(-bound, bound) {
		return a
	}
	sp := stored
	if a.sp.nonneg() {
		sp.lo = 0
	}
	return operand{fmt.Sprintf("%s %% 1000", paren(a.text)), sp}
}

// bare is text without the parentheses around all of it.
func bare(text string) string {
	if len(text) > 1 && text[0] == '(' && matching(text) {
		return text[1 : len(text)-1]
	}
	return text
}
