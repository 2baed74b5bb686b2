package main

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func TestIsTerminal(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	file, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name string
		w    io.Writer
	}{
		{"buffer", &bytes.Buffer{}},
		{"regular file", file},
		// A character device but no terminal: a status line there is wasted.
		{"/dev/null", devnull},
	} {
		if isTerminal(tc.w) {
			t.Errorf("%s: isTerminal = true, want false", tc.name)
		}
	}
}
