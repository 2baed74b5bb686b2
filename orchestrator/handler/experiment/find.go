package experiment

import (
	"context"
	"log/slog"
	"os"

	xp "github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
)

// Found is an experiment named on the command line of a reader (report,
// export): its store and its trajectory slots.
type Found struct {
	Name     string
	StoreURL string
	Store    store.Store
	Cells    []xp.Cell
	Attempts int
}

// Find finds an experiment by its spec file or, in the store (storeURL,
// else the spec's store, TRAJ_STORE, ./runs), by the name its record has.
// Bad specs, names and stores match replay.ErrUsage.
func Find(ctx context.Context, specOrName, storeURL string, logger *slog.Logger) (*Found, error) {
	x := &Found{}
	if fi, serr := os.Stat(specOrName); serr == nil && !fi.IsDir() {
		spec, err := xp.Load(specOrName)
		if err != nil {
			return nil, replay.Usage(err)
		}
		if storeURL != "" {
			spec.Store = storeURL
		}
		x.StoreURL = location.Choose(spec.Store, os.Getenv)
		x.Name, x.Cells, x.Attempts = spec.Name, spec.Cells(), spec.Relaunch.MaxAttempts
	} else {
		x.StoreURL = location.Choose(storeURL, os.Getenv)
	}
	st, err := location.Open(ctx, x.StoreURL, location.Options{Logger: logger, MustExist: true})
	if err != nil {
		return nil, replay.Usage(err)
	}
	x.Store = st
	if x.Name == "" {
		rec, err := xp.LoadRecord(ctx, st, specOrName)
		if err != nil {
			return nil, replay.Usage(err)
		}
		x.Name, x.Cells, x.Attempts = rec.Name, rec.Cells, rec.MaxAttempts
	}
	return x, nil
}

// attemptIDs are the trajectory ids a slot may have: one per attempt.
func (x *Found) attemptIDs(c xp.Cell) []string {
	ids := make([]string, 0, x.Attempts)
	for n := 1; n <= x.Attempts; n++ {
		ids = append(ids, c.AttemptID(n))
	}
	return ids
}

// IDs are the trajectory ids every attempt of every slot may have.
func (x *Found) IDs() []string {
	var ids []string
	for _, c := range x.Cells {
		ids = append(ids, x.attemptIDs(c)...)
	}
	return ids
}

// Report is the experiment as the report groups it: one slot per cell,
// with its attempts' ids.
func (x *Found) Report() *report.ExperimentRequest {
	slots := make([]report.ExperimentSlot, len(x.Cells))
	for i, c := range x.Cells {
		slots[i] = report.ExperimentSlot{Harness: c.Harness, Model: c.Model, Task: c.Task, Variant: c.Variant(), Repeat: c.Repeat, Attempts: x.attemptIDs(c)}
	}
	return &report.ExperimentRequest{Name: x.Name, Store: x.Store, StoreURL: x.StoreURL, Slots: slots}
}
