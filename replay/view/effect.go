package view

import (
	"errors"
	"net/http"
	"sort"
	"strconv"

	"github.com/trajlab/traj/replay/report"
)

// Effect is what one part did to the score: the score standing before it
// and at it (with the source), what its checkpoint's result changed, and
// the nearest parts before and after it where the score changed, so a
// reader walks a long trajectory from change to change.
type Effect struct {
	Part   int      `json:"part"`
	Source string   `json:"source,omitempty"`
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
	// Evaluated: the score source has a result for this very part.
	Evaluated bool `json:"evaluated"`
	// FirstPassed, Broken and Fixed name tests (from an evaluation) or
	// suites (ground truth, run_tests) that first passed, went from passing
	// to failing, or passed again at this part.
	FirstPassed []string `json:"first_passed"`
	Broken      []string `json:"broken"`
	Fixed       []string `json:"fixed"`
	// PrevChange and NextChange are the nearest parts where the score
	// changed (0: none).
	PrevChange int `json:"prev_change,omitempty"`
	NextChange int `json:"next_change,omitempty"`
}

// maxEffectTests bounds the names sent per list.
const maxEffectTests = 50

// effect computes part n's Effect from sc (and the evaluation's fixed
// tests when the score comes from one).
func effect(sc report.Series, fixed map[int][]string, n int) Effect {
	e := Effect{Part: n, Source: sc.Source, FirstPassed: []string{}, Broken: []string{}, Fixed: []string{}}
	if sc.Empty() {
		return e
	}
	if p, ok := sc.At(n - 1); ok {
		e.Before = &p.Rate
	}
	if p, ok := sc.At(n); ok {
		e.After = &p.Rate
		e.Evaluated = p.Part == n
	}
	cut := func(l []string) []string {
		l = append([]string{}, l...)
		sort.Strings(l)
		return l[:min(len(l), maxEffectTests)]
	}
	if e.Evaluated {
		e.FirstPassed, e.Broken = cut(sc.Gains[n]), cut(sc.Drops[n])
		if sc.Source == fromEvaluation {
			e.Fixed = cut(fixed[n])
		}
	}
	// Score changes: the first result, and parts whose rate differs from
	// the result before.
	pts := sc.Points
	changed := func(j int) bool { return j == 0 || pts[j].Rate != pts[j-1].Rate }
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Part >= n })
	for j := i - 1; j >= 0; j-- {
		if changed(j) {
			e.PrevChange = pts[j].Part
			break
		}
	}
	for j := i; j < len(pts); j++ {
		if pts[j].Part > n && changed(j) {
			e.NextChange = pts[j].Part
			break
		}
	}
	return e
}

func (s *Server) apiEffect(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		httpError(w, errors.Join(errBadRequest, errors.New("part: a number from 1")))
		return
	}
	var fixed map[int][]string
	if snap.eval != nil {
		fixed = snap.eval.fixed
	}
	writeJSON(w, effect(snap.scores().Score, fixed, n))
}
