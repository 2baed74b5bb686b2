package ref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/trajlab/traj/trace/store"
)

// Loader is the part of a store LoadEvaluation needs.
type Loader interface {
	Load(ctx context.Context, key string, fn func(io.Reader) error) error
}

// LoadEvaluation decodes the evaluation report (evaluation.json) of the
// trajectory under prefix in st into v, a value of the caller's type
// (replay.Output: the format is replay's, not the store's), or hands the
// stream to v when it is an io.ReaderFrom (a reader that needs a small
// part of a large report). found is false when there is none; a report
// that does not decode is an error naming it.
// The one reader of a stored evaluation: report, export and view call it.
func LoadEvaluation(ctx context.Context, st Loader, prefix string, v any) (found bool, err error) {
	key := prefix + store.EvaluationName
	err = st.Load(ctx, key, func(r io.Reader) error {
		if rf, ok := v.(io.ReaderFrom); ok {
			_, err := rf.ReadFrom(r)
			return err
		}
		return json.NewDecoder(r).Decode(v)
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("read evaluation %s: %w", key, err)
}

// EvaluationKey is the key of the trajectory's evaluation report in Store.
func (t *Trajectory) EvaluationKey() string { return t.Prefix + store.EvaluationName }

// LoadEvaluation decodes the trajectory's evaluation report into v (see
// the package function).
func (t *Trajectory) LoadEvaluation(ctx context.Context, v any) (found bool, err error) {
	found, err = LoadEvaluation(ctx, t.Store, t.Prefix, v)
	if err != nil {
		return false, fmt.Errorf("trajectory %s (%s): %w", t.ID, t.Where, err)
	}
	return found, nil
}

// EvaluationStamp names the evaluation report's state (size and time)
// without reading it, "" when there is none: a reader that keeps a decoded
// report loads it again only when the stamp changes.
func (t *Trajectory) EvaluationStamp(ctx context.Context) (string, error) {
	fi, err := t.Store.Stat(ctx, t.EvaluationKey())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("stat %s: %w", t.Store.URI(t.EvaluationKey()), err)
	}
	return fmt.Sprint(fi.Size, fi.ModTime.UnixNano()), nil
}
