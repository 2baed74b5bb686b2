package view

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/trajlab/traj/trace/store"
)

// experimentRecord is what the store page reads of an experiment's record
// (experiments/<name>/experiment.json, written by orchestrator/experiment):
// its name and the trajectory id of each slot. Relaunched attempts are the
// slot's id with "-a<n>" appended.
type experimentRecord struct {
	Name  string `json:"name"`
	Cells []struct {
		ID string `json:"trajectory_id"`
	} `json:"cells"`
}

// experimentOf maps trajectory ids to the experiment that ran them, from
// every record in the store. An unreadable record is skipped: grouping by
// experiment is a convenience, the store page does not fail for it.
func experimentOf(ctx context.Context, st store.Store) (map[string]string, error) {
	var keys []string
	err := st.List(ctx, store.ExperimentsDir, func(fi store.FileInfo) error {
		if strings.HasSuffix(fi.Key, "/experiment.json") {
			keys = append(keys, fi.Key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		var rec experimentRecord
		if st.Load(ctx, k, func(r io.Reader) error { return json.NewDecoder(r).Decode(&rec) }) != nil || rec.Name == "" {
			continue
		}
		for _, c := range rec.Cells {
			out[c.ID] = rec.Name
		}
	}
	return out, nil
}

// experimentsEvery is how often the store page lists experiments again:
// the page polls every few seconds, and on S3 a listing and a read per
// experiment each time would cost more than the rest of the page.
const experimentsEvery = 30 * time.Second

// experimentCache keeps the last experimentOf answer for experimentsEvery.
type experimentCache struct {
	mu   sync.Mutex
	at   time.Time
	exps map[string]string
}

func (c *experimentCache) get(ctx context.Context, st store.Store) (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exps != nil && time.Since(c.at) < experimentsEvery {
		return c.exps, nil
	}
	exps, err := experimentOf(ctx, st)
	if err != nil {
		return c.exps, err
	}
	c.exps, c.at = exps, time.Now()
	return exps, nil
}

// experimentFor is id's experiment: its slot's, or, for a relaunched
// attempt (id-a<n>), the slot's.
func experimentFor(exps map[string]string, id string) string {
	if e, ok := exps[id]; ok {
		return e
	}
	if i := strings.LastIndex(id, "-a"); i > 0 {
		return exps[id[:i]]
	}
	return ""
}
