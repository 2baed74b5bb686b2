package sweepvalue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/trajlab/traj/trace/store"
)

// Version is the version of the stored result's format.
const Version = 1

// Result is a sweep's stored result.
type Result struct {
	Version int `json:"version"`
	// Name is the sweep's name (its experiment's); Source the trajectory
	// it forked, SourceParts its part count.
	Name        string `json:"name"`
	Source      string `json:"source"`
	SourceParts int    `json:"source_parts"`
	// Harness, Model, Script and Prompt are what the forks ran after the
	// fork point; Repeats forks at each part, MaxParts each fork's budget.
	Harness  string `json:"harness,omitempty"`
	Model    string `json:"model"`
	Script   string `json:"script,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Repeats  int    `json:"repeats"`
	MaxParts int    `json:"max_parts"`
	Executor string `json:"executor"`
	// CreatedAt is when the result was computed (RFC 3339, UTC).
	CreatedAt string `json:"created_at"`
	// Rows is the value at each swept part, ascending by part.
	Rows []Row `json:"rows"`
	// Decisive is the swept part where the value drops most (nil: none).
	Decisive *Decisive `json:"decisive,omitempty"`
	Forks    []Fork    `json:"forks"`
}

// Fork is one fork of the sweep.
type Fork struct {
	ID string `json:"trajectory_id"`
	// At is the swept part asked for; ForkPart the fork point the fork
	// recorded (forked_from.part: At rounded up to the end of the model
	// response that produced it), 0 when it recorded none.
	At       int `json:"at"`
	ForkPart int `json:"fork_part"`
	Repeat   int `json:"repeat"`
	// End is its session_end reason ("" while unfinished or missing).
	End string `json:"end_reason,omitempty"`
	// Value is the best ground truth from the fork point on (nil: no
	// result); Solved says a result from there passed every case.
	Value  *float64 `json:"value"`
	Solved bool     `json:"solved"`
	// Reproduced counts its parts equal to the source's from the first
	// (replay/rerun); PrefixOK says all of 1..ForkPart were.
	Reproduced int    `json:"reproduced"`
	PrefixOK   bool   `json:"prefix_reproduced"`
	Divergence string `json:"divergence,omitempty"`
	// Error says why the fork could not be read or compared.
	Error string `json:"error,omitempty"`
}

// Counted says whether the fork's value counts for its part: its prefix
// was reproduced and it has a result.
func (f Fork) Counted() bool { return f.PrefixOK && f.Value != nil && f.Error == "" }

// Row is the value of the source's state at one swept part.
type Row struct {
	Part     int `json:"part"`
	ForkPart int `json:"fork_part"`
	// Forks counts the part's forks; Counted those whose value counts
	// (Fork.Counted), NotReproduced those whose prefix differed.
	Forks         int `json:"forks"`
	Counted       int `json:"counted"`
	NotReproduced int `json:"not_reproduced"`
	// Mean, Std (population), Min and Max of the counted forks' values;
	// Solved of them passed every case, ShareSolved = Solved / Counted.
	Mean        float64 `json:"mean"`
	Std         float64 `json:"std"`
	Min         float64 `json:"min"`
	Max         float64 `json:"max"`
	Solved      int     `json:"solved"`
	ShareSolved float64 `json:"share_solved"`
}

// Decisive is where the value drops most: from Before (the swept part
// before) to Part, by Drop (mean value).
type Decisive struct {
	Part   int     `json:"part"`
	Before int     `json:"before"`
	Drop   float64 `json:"drop"`
}

// Summarize is the rows and the decisive part of forks: one row per
// swept part (Fork.At), ascending.
func Summarize(forks []Fork) ([]Row, *Decisive) {
	by := map[int][]Fork{}
	for _, f := range forks {
		by[f.At] = append(by[f.At], f)
	}
	parts := make([]int, 0, len(by))
	for p := range by {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	rows := make([]Row, 0, len(parts))
	for _, p := range parts {
		r := Row{Part: p}
		var vals []float64
		for _, f := range by[p] {
			r.Forks++
			r.ForkPart = max(r.ForkPart, f.ForkPart)
			if !f.PrefixOK && f.Error == "" {
				r.NotReproduced++
			}
			if !f.Counted() {
				continue
			}
			vals = append(vals, *f.Value)
			if f.Solved {
				r.Solved++
			}
		}
		r.Counted = len(vals)
		if len(vals) > 0 {
			r.Min, r.Max = vals[0], vals[0]
			sum := 0.0
			for _, v := range vals {
				sum += v
				r.Min, r.Max = min(r.Min, v), max(r.Max, v)
			}
			r.Mean = sum / float64(len(vals))
			ss := 0.0
			for _, v := range vals {
				ss += (v - r.Mean) * (v - r.Mean)
			}
			r.Std = math.Sqrt(ss / float64(len(vals)))
			r.ShareSolved = float64(r.Solved) / float64(len(vals))
		}
		rows = append(rows, r)
	}
	return rows, decisive(rows)
}

// decisive is the largest drop of the mean between counted rows next to
// each other (a row without counted forks is skipped); the first of equal
// drops.
func decisive(rows []Row) *Decisive {
	var d *Decisive
	prev := -1
	for i, r := range rows {
		if r.Counted == 0 {
			continue
		}
		if prev >= 0 {
			drop := rows[prev].Mean - r.Mean
			if drop > 1e-12 && (d == nil || drop > d.Drop+1e-12) {
				d = &Decisive{Part: r.Part, Before: rows[prev].Part, Drop: drop}
			}
		}
		prev = i
	}
	return d
}

// Loader is what reading stored results needs of a store.
type Loader interface {
	Load(ctx context.Context, key string, fn func(io.Reader) error) error
	List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error
}

// Save writes r into st beside its source (store.SweepKey).
func Save(ctx context.Context, st store.Store, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := st.Save(ctx, store.SweepKey(r.Source, r.Name), store.Bytes(append(b, '\n'))); err != nil {
		return fmt.Errorf("save sweep %s of %s: %w", r.Name, r.Source, err)
	}
	return nil
}

// Decode reads one stored result.
func Decode(r io.Reader) (*Result, error) {
	var res Result
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("read sweep result: %w", err)
	}
	if res.Version > Version {
		return nil, fmt.Errorf("read sweep result: version %d is newer than this traj reads (%d)", res.Version, Version)
	}
	return &res, nil
}

// LoadAll reads every stored sweep of the trajectory whose objects are
// under prefix in st (store.TrajectoryPrefix(id) in a store; "" in its
// folder), by name.
func LoadAll(ctx context.Context, st Loader, prefix string) ([]*Result, error) {
	var keys []string
	err := st.List(ctx, prefix+store.SweepsDir, func(fi store.FileInfo) error {
		if strings.HasSuffix(fi.Key, ".json") {
			keys = append(keys, fi.Key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("list sweeps under %q: %w", prefix, err)
	}
	sort.Strings(keys)
	var out []*Result
	for _, k := range keys {
		var res *Result
		err := st.Load(ctx, k, func(r io.Reader) error {
			var err error
			res, err = Decode(r)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, res)
	}
	return out, nil
}
