package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
)

// palette is colour-blind friendly (Okabe–Ito plus extras); series take
// its colours in turn, wrapping around.
var palette = [...]string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#7F7F7F", "#8C564B"}

func color(i int) string { return palette[i%len(palette)] }

// series is one line of a chart.
type series struct {
	Name   string
	Points []Point
	Color  string
	// End is the last part of the trajectory: the line holds its last
	// rate until there. 0 means the last point.
	End int
	// Bold draws the line wider (the overall rate above its suites).
	Bold bool
	// Dashed draws a line behind the others (a fork's source).
	Dashed bool
	// Mark, when > 0, draws a vertical line at that part (a fork point).
	Mark int
}

// chartBox is the plot geometry.
type chartBox struct {
	W, H                     float64
	Left, Right, Top, Bottom float64
}

func (b chartBox) plotW() float64 { return b.W - b.Left - b.Right }
func (b chartBox) plotH() float64 { return b.H - b.Top - b.Bottom }

// lineChart draws pass rate (0–100 %) against part as stair lines: a
// rate holds from the part it was measured at until the next measurement.
func lineChart(title string, ss []series, width, height int, legend bool) template.HTML {
	box := chartBox{W: float64(width), H: float64(height), Left: 46, Right: 14, Top: 26, Bottom: 34}
	var legendRows int
	if legend && len(ss) > 0 {
		perRow := max(1, int(box.plotW()/150))
		legendRows = (len(ss) + perRow - 1) / perRow
		box.H += float64(legendRows) * 16
		box.Bottom += float64(legendRows) * 16
	}
	maxPart := 1
	for _, s := range ss {
		for _, p := range s.Points {
			maxPart = max(maxPart, p.Part)
		}
		maxPart = max(maxPart, s.End)
	}
	x := func(part float64) float64 { return box.Left + (part-1)/math.Max(float64(maxPart-1), 1)*box.plotW() }
	if maxPart == 1 {
		x = func(float64) float64 { return box.Left + box.plotW()/2 }
	}
	y := func(rate float64) float64 { return box.Top + (1-rate)*box.plotH() }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`,
		box.W, box.H, box.W, box.H, esc(title))
	fmt.Fprintf(&b, `<text x="%.0f" y="16" class="title">%s</text>`, box.Left, esc(title))
	for _, r := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="grid"/>`, box.Left, box.Left+box.plotW(), y(r), y(r))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="ylab">%.0f%%</text>`, box.Left-6, y(r)+4, r*100)
	}
	for _, tk := range ticks(maxPart) {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="tick"/>`, x(float64(tk)), x(float64(tk)), box.Top+box.plotH(), box.Top+box.plotH()+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="xlab">%d</text>`, x(float64(tk)), box.Top+box.plotH()+16, tk)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="axis">part</text>`, box.Left+box.plotW()/2, box.Top+box.plotH()+30)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="frame"/>`, box.Left, box.Top, box.plotW(), box.plotH())
	if len(ss) == 0 || allEmpty(ss) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="empty">no test results</text>`, box.Left+box.plotW()/2, box.Top+box.plotH()/2)
	}
	for _, s := range ss {
		if len(s.Points) == 0 {
			continue
		}
		var d strings.Builder
		for i, p := range s.Points {
			if i == 0 {
				fmt.Fprintf(&d, "M%.1f %.1f", x(float64(p.Part)), y(p.Rate))
				continue
			}
			fmt.Fprintf(&d, "H%.1f V%.1f", x(float64(p.Part)), y(p.Rate))
		}
		end := s.Points[len(s.Points)-1].Part
		if s.End > end {
			end = s.End
		}
		fmt.Fprintf(&d, "H%.1f", x(float64(end)))
		width := 2.0
		if s.Bold {
			width = 3
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&b, `<path d="%s" class="line" stroke="%s" stroke-width="%.0f"%s><title>%s</title></path>`, d.String(), s.Color, width, dash, esc(s.Name))
		if s.Mark > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="mark" stroke="%s"><title>%s: fork at part %d</title></line>`,
				x(float64(s.Mark)), x(float64(s.Mark)), box.Top, box.Top+box.plotH(), s.Color, esc(s.Name), s.Mark)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="marklab">fork at %d</text>`, x(float64(s.Mark))+3, box.Top+11, s.Mark)
		}
		// A dot where the rate changes (and at the first point).
		for i, p := range s.Points {
			if i > 0 && p.Rate == s.Points[i-1].Rate {
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s: part %d, %.1f%%</title></circle>`,
				x(float64(p.Part)), y(p.Rate), s.Color, esc(s.Name), p.Part, p.Rate*100)
		}
	}
	if legend && len(ss) > 0 {
		perRow := max(1, int(box.plotW()/150))
		for i, s := range ss {
			lx := box.Left + float64(i%perRow)*150
			ly := box.H - float64(legendRows)*16 + float64(i/perRow)*16 + 2
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="4" fill="%s"/>`, lx, ly+4, s.Color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="legend">%s</text>`, lx+16, ly+10, esc(shorten(s.Name, 22)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func allEmpty(ss []series) bool {
	for _, s := range ss {
		if len(s.Points) > 0 {
			return false
		}
	}
	return true
}

// barChart draws labelled horizontal bars.
func barChart(title string, counts []Count, width int) template.HTML {
	const rowH, left, top = 24.0, 150.0, 28.0
	h := top + float64(max(len(counts), 1))*rowH + 10
	maxN := 1
	for _, c := range counts {
		maxN = max(maxN, c.N)
	}
	plotW := float64(width) - left - 50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%.0f" viewBox="0 0 %d %.0f" role="img" aria-label="%s">`, width, h, width, h, esc(title))
	fmt.Fprintf(&b, `<text x="10" y="16" class="title">%s</text>`, esc(title))
	if len(counts) == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="empty">no trajectories</text>`, float64(width)/2, top+12)
	}
	for i, c := range counts {
		yy := top + float64(i)*rowH
		w := float64(c.N) / float64(maxN) * plotW
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" class="blab">%s</text>`, left-8, yy+15, esc(orDash(c.Label)))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s: %d</title></rect>`, left, yy+3, math.Max(w, 1), rowH-8, reasonColor(c.Label), esc(c.Label), c.N)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="bval">%d</text>`, left+w+6, yy+15, c.N)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// reasonColor gives end reasons stable colours: green for solved, amber for
// budgets and time, red for errors.
func reasonColor(reason string) string {
	switch reason {
	case "solved":
		return "#009E73"
	case "part_limit", "timeout":
		return "#E69F00"
	case "interrupted", "running":
		return "#56B4E9"
	default:
		return "#D55E00"
	}
}

// ticks picks at most ~10 round part numbers in 1..n.
func ticks(n int) []int {
	if n <= 1 {
		return []int{1}
	}
	span := 1
	for _, s := range []int{1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000} {
		span = s
		if n/s <= 10 {
			break
		}
	}
	out := []int{1}
	for v := span; v <= n; v += span {
		if v != 1 {
			out = append(out, v)
		}
	}
	return out
}

func esc(s string) string { return html.EscapeString(s) }

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
