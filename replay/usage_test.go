package replay

import (
	"errors"
	"io/fs"
	"testing"
)

// TestUsage: Usage marks an error as the request's without hiding it:
// its message and chain are the error's; nil stays nil.
func TestUsage(t *testing.T) {
	if Usage(nil) != nil {
		t.Fatal("Usage(nil) is not nil")
	}
	err := Usage(&fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist})
	if !errors.Is(err, ErrUsage) || !errors.Is(err, fs.ErrNotExist) || err.Error() != "open x: file does not exist" {
		t.Errorf("Usage: %v (usage %v, not exist %v)", err, errors.Is(err, ErrUsage), errors.Is(err, fs.ErrNotExist))
	}
	if errors.Is(errors.New("x"), ErrUsage) {
		t.Error("a plain error matches ErrUsage")
	}
}
