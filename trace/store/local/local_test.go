package local_test

import (
	"testing"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		s, err := local.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{})
}
