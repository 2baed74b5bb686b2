package fresh

import (
	"fmt"
	"strings"
)

// pureFunc writes `int name(int p1, …)`: locals, statements, loops
// without calls, and a return; it reads globals, never writes them.
func (w *writer) pureFunc(name string, nargs int, globals []array, callable []fn) {
	var params []string
	b := &body{sc: scope{arrs: globals, calls: callable}}
	for i := range nargs {
		p := fmt.Sprintf("p%d", i+1)
		params = append(params, "int "+p)
		b.sc.vals = append(b.sc.vals, operand{p, stored})
		b.assign = append(b.assign, local{p})
	}
	w.line("int %s(%s) {", name, strings.Join(params, ", "))
	w.indent++
	w.inFunc = true
	w.declare(b)
	w.stmts(b, 1+w.g.intn(3), 2)
	w.line("return %s;", w.g.store(w.g.expr(&b.sc, 3)).text)
	w.inFunc = false
	w.indent--
	w.line("}")
	w.line("")
}

// recursive writes `int name(int n, int acc)`, which recurses n times
// (n ≤ bound) and is pure.
func (w *writer) recursive(name string) {
	b := &body{sc: scope{vals: []operand{{"n", span{1, bound}}, {"acc", stored}}}}
	w.line("int %s(int n, int acc) {", name)
	w.line("    if (n <= 0) {")
	w.line("        return acc;")
	w.line("    }")
	w.line("    return %s(n - 1, %s);", name, w.g.store(w.g.expr(&b.sc, 2)).text)
	w.line("}")
	w.line("")
}

// initArray writes a loop giving every element of a a value.
func (w *writer) initArray(b *body, a array) {
	i := w.name("i")
	sc := b.sc
	sc.vals = append(append([]operand(nil), sc.vals...), operand{i, span{0, int64(a.n - 1)}})
	sc.calls = nil
	w.line("for (int %s = 0; %s < %d; %s = %s + 1) {", i, i, a.n, i, i)
	w.line("    %s[%s] = %s;", a.name, i, w.g.store(w.g.expr(&sc, 2)).text)
	w.line("}")
}

// sumArray declares a local holding a weighted sum of a's elements and
// makes it readable.
func (w *writer) sumArray(b *body, a array) {
	s, i := w.name("s"), w.name("i")
	w.line("int %s = 0;", s)
	w.line("for (int %s = 0; %s < %d; %s = %s + 1) {", i, i, a.n, i, i)
	w.line("    %s = (%s + %s[%s] * (%s + 1)) %% 1000;", s, s, a.name, i, i)
	w.line("}")
	b.sc.vals = append(b.sc.vals, operand{s, stored})
}

func pow2(w *writer) int { return 4 << w.g.intn(3) } // 4, 8 or 16

// level3: functions (pure, one recursive) and arrays (global and local).
func (w *writer) level3() {
	var globals []array
	for range 1 + w.g.intn(2) {
		g := array{w.name(sigil + "g"), pow2(w)}
		globals = append(globals, g)
		w.line("int %s[%d];", g.name, g.n)
	}
	w.line("")
	var fns []fn
	if w.g.intn(2) == 0 {
		r := fn{w.name(sigil + "r"), 2}
		w.recursive(r.name)
		fns = append(fns, r)
	}
	for range 1 + w.g.intn(3) {
		f := fn{w.name(sigil + "f"), 1 + w.g.intn(3)}
		w.pureFunc(f.name, f.nargs, globals, fns)
		fns = append(fns, f)
	}
	w.line("int %smain(void) {", sigil)
	w.indent++
	b := &body{sc: scope{calls: fns}}
	for range 2 + w.g.intn(2) {
		w.declare(b)
	}
	loc := array{w.name("a"), pow2(w)}
	w.line("int %s[%d];", loc.name, loc.n)
	w.initArray(b, loc)
	arrs := append([]array{loc}, globals...)
	b.sc.arrs, b.arrs = arrs, arrs
	w.stmts(b, 3+w.g.intn(4), 2)
	for _, a := range arrs {
		w.sumArray(b, a)
	}
	w.line("return %s;", w.checksum(&b.sc))
	w.indent--
	w.line("}")
}

// structField is a field of the level-4 struct: an int, or an int array
// of n (a power of two).
type structField struct {
	name string
	n    int
}

// level4: a struct (int and array fields), pointers to ints, to arrays
// and to the struct, functions taking them, struct assignment.
func (w *writer) level4() {
	tag := w.name(sigil + "S")
	var fields []structField
	for range 2 + w.g.intn(2) {
		fields = append(fields, structField{w.name("m"), 0})
	}
	if w.g.intn(3) > 0 {
		fields = append(fields, structField{w.name("m"), 4})
	}
	w.line("struct %s {", tag)
	for _, f := range fields {
		if f.n > 0 {
			w.line("    int %s[%d];", f.name, f.n)
		} else {
			w.line("    int %s;", f.name)
		}
	}
	w.line("};")
	w.line("")
	// access adds what base (an expression naming a struct, e.g. "s" or
	// "p->"-style via sep) offers to b.
	access := func(b *body, base, sep string) {
		for _, f := range fields {
			if f.n > 0 {
				a := array{base + sep + f.name, f.n}
				b.sc.arrs = append(b.sc.arrs, a)
				b.arrs = append(b.arrs, a)
				continue
			}
			lv := base + sep + f.name
			b.sc.vals = append(b.sc.vals, operand{lv, stored})
			b.assign = append(b.assign, local{lv})
		}
	}
	// A function updating a struct through a pointer.
	upd := w.name(sigil + "u")
	{
		b := &body{sc: scope{vals: []operand{{"v", stored}}}}
		access(b, "p", "->")
		w.line("void %s(struct %s *p, int v) {", upd, tag)
		w.indent++
		w.inFunc = true
		w.stmts(b, 2+w.g.intn(2), 1)
		w.inFunc = false
		w.indent--
		w.line("}")
		w.line("")
	}
	// A function writing through an int pointer.
	bump := w.name(sigil + "b")
	{
		b := &body{sc: scope{vals: []operand{{"(*q)", stored}, {"k", stored}}}, assign: []local{{"*q"}}}
		w.line("void %s(int *q, int k) {", bump)
		w.line("    *q = %s;", w.g.store(w.g.expr(&b.sc, 2)).text)
		w.line("}")
		w.line("")
	}
	// A pure function reading an array through a pointer.
	sum := w.name(sigil + "t")
	w.line("int %s(int *p, int n) {", sum)
	w.line("    int s = 0;")
	w.line("    for (int i = 0; i < n; i = i + 1) {")
	w.line("        s = (s + *(p + i) * %d) %% 1000;", 1+w.g.intn(9))
	w.line("    }")
	w.line("    return s;")
	w.line("}")
	w.line("")
	// A pure function taking the struct by value.
	get := w.name(sigil + "w")
	{
		b := &body{}
		access(b, "s", ".")
		b.arrs = nil
		w.line("int %s(struct %s s) {", get, tag)
		w.line("    return %s;", w.g.store(w.g.expr(&b.sc, 2)).text)
		w.line("}")
		w.line("")
	}

	w.line("int %smain(void) {", sigil)
	w.indent++
	b := &body{}
	for range 2 {
		w.declare(b)
	}
	s1, s2 := w.name("s"), w.name("s")
	w.line("struct %s %s;", tag, s1)
	w.line("struct %s %s;", tag, s2)
	for _, f := range fields {
		if f.n > 0 {
			w.initArray(b, array{s1 + "." + f.name, f.n})
		} else {
			w.line("%s.%s = %s;", s1, f.name, w.g.store(w.g.expr(&b.sc, 2)).text)
		}
	}
	arr := array{w.name("a"), 8}
	w.line("int %s[%d];", arr.name, arr.n)
	w.initArray(b, arr)
	target := b.assign[w.g.intn(len(b.assign))].lv
	ptr, sp, q := w.name("p"), w.name("ps"), w.name("q")
	w.line("int *%s = &%s;", ptr, target)
	w.line("struct %s *%s = &%s;", tag, sp, s1)
	off := w.g.intn(4)
	w.line("int *%s = %s + %d;", q, arr.name, off)
	access(b, s1, ".")
	access(b, sp, "->")
	b.sc.vals = append(b.sc.vals, operand{"(*" + ptr + ")", stored}, operand{fmt.Sprintf("*(%s + %d)", arr.name, w.g.intn(8)), stored})
	b.assign = append(b.assign, local{"*" + ptr})
	b.sc.arrs = append(b.sc.arrs, arr, array{q, 4})
	b.arrs = append(b.arrs, arr, array{q, 4})
	b.actions = []string{
		upd + "(&" + s1 + ", %s);",
		upd + "(" + sp + ", %s);",
		bump + "(" + ptr + ", %s);",
		bump + "(&" + arr.name + "[" + fmt.Sprint(w.g.intn(8)) + "], %s);",
	}
	w.stmts(b, 3+w.g.intn(3), 2)
	w.line("%s = %s;", s2, s1)
	w.stmts(b, 1+w.g.intn(2), 1)
	r1, r2, r3 := w.name("r"), w.name("r"), w.name("r")
	w.line("int %s = %s(%s, %d);", r1, sum, arr.name, arr.n)
	w.line("int %s = %s(%s);", r2, get, s2)
	w.line("int %s = %s(%s);", r3, get, s1)
	b.sc.vals = append(b.sc.vals, operand{r1, stored}, operand{r2, stored}, operand{r3, stored})
	for _, f := range fields {
		if f.n > 0 {
			w.sumArray(b, array{s2 + "." + f.name, f.n})
		} else {
			b.sc.vals = append(b.sc.vals, operand{s2 + "." + f.name, stored})
		}
	}
	w.line("return %s;", w.checksum(&b.sc))
	w.indent--
	w.line("}")
}
