package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/ref"
)

// Lineage says where a trajectory came from (the trace's rerun_of or
// forked_from), ready for the pages: the store row and the trajectory page
// say it, and the compare page draws a fork over its source.
type Lineage struct {
	// Kind is "fork" or "rerun".
	Kind   string `json:"kind"`
	Source string `json:"source"`
	// Part is a fork's point: the source's parts 1..Part are inherited.
	Part int `json:"part,omitempty"`
	// Store is the source's store when it is not this one.
	Store string `json:"store,omitempty"`
	// InStore: the source is a trajectory of the store being viewed (the
	// pages link to it).
	InStore bool `json:"in_store"`
	// Rerun is a rerun's comparison with its source (rerun.json's summary
	// line), when the store holds one.
	Rerun string `json:"rerun,omitempty"`
}

// lineageOf reads a header's lineage (nil: none). A fork wins over a
// rerun: a fork's inherited parts are a rerun of its source anyway.
func lineageOf(h trace.Header) *Lineage {
	switch {
	case h.ForkedFrom != nil && h.ForkedFrom.TrajectoryID != "":
		return &Lineage{Kind: "fork", Source: h.ForkedFrom.TrajectoryID, Part: h.ForkedFrom.Part, Store: h.ForkedFrom.Store}
	case h.RerunOf != nil && h.RerunOf.TrajectoryID != "":
		return &Lineage{Kind: "rerun", Source: h.RerunOf.TrajectoryID, Store: h.RerunOf.Store}
	}
	return nil
}

// here reports whether the lineage's source can be in the viewed store:
// it names no other store and its id is a valid one.
func (s *Server) here(l *Lineage) bool {
	if l.Store != "" && l.Store != s.cat.storeURL && l.Store != s.storeName() {
		return false
	}
	return store.ValidateID(l.Source) == nil
}

// sourceInStore looks the lineage's source up in the viewed store (a Stat,
// or one listing of its chunks).
func (s *Server) sourceInStore(ctx context.Context, l *Lineage) bool {
	if !s.here(l) {
		return false
	}
	_, ok, err := ref.Lookup(ctx, s.cat.st, l.Source)
	if err != nil {
		s.logger.Debug("look up lineage source", "source", l.Source, "err", err)
	}
	return ok
}

// SweepView is one fork sweep of a trajectory (replay/sweepvalue) as the
// trajectory page draws it: a band of its forks' values (min to max) and
// their mean under the trajectory's own curve, a mark at the decisive part.
type SweepView struct {
	Name     string               `json:"name"`
	Model    string               `json:"model"`
	Repeats  int                  `json:"repeats"`
	Rows     []sweepvalue.Row     `json:"rows"`
	Decisive *sweepvalue.Decisive `json:"decisive,omitempty"`
}

// apiSweeps serves the trajectory's stored fork sweeps ([] for none).
func (s *Server) apiSweeps(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := store.ValidateID(id); err != nil {
		httpError(w, errors.Join(errBadRequest, err))
		return
	}
	res, err := sweepvalue.LoadAll(r.Context(), s.cat.st, store.TrajectoryPrefix(id))
	if err != nil {
		httpError(w, err)
		return
	}
	out := make([]SweepView, 0, len(res))
	for _, sw := range res {
		out = append(out, SweepView{Name: sw.Name, Model: sw.Model, Repeats: sw.Repeats, Rows: sw.Rows, Decisive: sw.Decisive})
	}
	writeJSON(w, out)
}

// loadRerun reads a rerun's comparison (rerun.json) and returns its
// summary line ("" when the store holds none).
func loadRerun(ctx context.Context, st store.Store, prefix string) (string, error) {
	var rep rerun.Report
	err := st.Load(ctx, prefix+store.RerunName, func(r io.Reader) error {
		rep = rerun.Report{}
		return json.NewDecoder(r).Decode(&rep)
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", st.URI(prefix+store.RerunName), err)
	}
	return rep.Summary(), nil
}
