package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/sandbox/harness/recorded"
)

func TestLookup(t *testing.T) {
	for _, c := range []struct{ name, want, err string }{
		{"", harness.Default, ""},
		{"opencode", "opencode", ""},
		{"claude-code", "claude-code", ""},
		{"codex", "codex", ""},
		{"aider", "", `harness "aider": want one of opencode, claude-code, codex`},
	} {
		h, err := harness.Lookup(c.name)
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err {
				t.Errorf("Lookup(%q) error = %v, want %q", c.name, err, c.err)
			}
		case err != nil || h.Name != c.want:
			t.Errorf("Lookup(%q) = %q, %v; want %q", c.name, h.Name, err, c.want)
		}
	}
}

func TestRecorded(t *testing.T) {
	for _, c := range []struct {
		field, name, version string
		ok                   bool
	}{
		{"opencode@1.18.33", "opencode", "1.18.33", true},
		{"", harness.Default, "", true},
		{"claude-code@2.1.330", "claude-code", "2.1.330", true},
		{"codex@0.169.0", "codex", "0.169.0", true},
		{"other@1", "", "1", false},
	} {
		h, id, ok := harness.Recorded(c.field)
		if ok != c.ok || h.Name != c.name || id.Version != c.version {
			t.Errorf("Recorded(%q) = %q %+v %v; want %q %q %v", c.field, h.Name, id, ok, c.name, c.version, c.ok)
		}
	}
}

// TestEveryHarnessIsComplete: each value has every part a run, resume and
// finalize use, and its mounts show the binary and its state folders but
// never the secret files or the adapter's own state beside them.
func TestEveryHarnessIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range harness.All() {
		t.Run(h.Name, func(t *testing.T) {
			if h.Name == "" || seen[h.Name] {
				t.Fatalf("name %q empty or listed twice", h.Name)
			}
			seen[h.Name] = true
			if h.Locate == nil || h.Mounts == nil || h.Start == nil || h.SecretFiles == nil {
				t.Fatalf("%s: a field is nil: %+v", h.Name, h)
			}
			dir := t.TempDir()
			bin := filepath.Join(t.TempDir(), "harness-bin")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			mounts, err := h.Mounts(dir, bin)
			if err != nil {
				t.Fatal(err)
			}
			var binShown bool
			insides := map[string]bool{}
			for _, m := range mounts {
				if m.Host == bin {
					binShown = true
					if m.Writable {
						t.Errorf("binary mounted writable: %+v", m)
					}
				}
				if !filepath.IsAbs(m.Inside) || insides[m.Inside] {
					t.Errorf("inside path %q not absolute or shown twice", m.Inside)
				}
				insides[m.Inside] = true
				if m.Host == dir || !strings.HasPrefix(m.Host, dir+string(filepath.Separator)) && m.Host != bin {
					t.Errorf("mount %+v: not the binary and not a folder below the state folder", m)
				}
				if _, err := os.Stat(m.Host); err != nil {
					t.Errorf("mount %+v: %v", m, err)
				}
				for _, f := range h.SecretFiles(dir) {
					if rel, err := filepath.Rel(m.Host, f); err == nil && !strings.HasPrefix(rel, "..") {
						t.Errorf("secret file %s is shown by mount %+v", f, m)
					}
				}
			}
			if !binShown {
				t.Errorf("the binary is not mounted: %+v", mounts)
			}
			if insides[sandbox.InsideHome] {
				t.Errorf("a mount at the sandbox's HOME (%s): the container provider refuses it: %+v", sandbox.InsideHome, mounts)
			}
			// A disk cap holds exactly the writable folders: none missed,
			// none nested in another (each is bound into the cap once).
			state, err := h.WritableState(dir)
			if err != nil {
				t.Fatal(err)
			}
			var writable []string
			for _, m := range mounts {
				if m.Writable {
					writable = append(writable, m.Host)
				}
			}
			if len(state) == 0 || strings.Join(state, "\n") != strings.Join(writable, "\n") {
				t.Errorf("WritableState %v, writable mounts %v", state, writable)
			}
			for _, a := range state {
				for _, b := range state {
					if a != b && strings.HasPrefix(b, a+string(filepath.Separator)) {
						t.Errorf("writable state folder %s lies in %s", b, a)
					}
				}
			}
		})
	}
}

// TestStartsWhatReadersRead: every harness traj starts carries the
// reader-only entry of the same name (sandbox/harness/recorded), in the
// same order, so a run's trace is read by its harness's reader.
func TestStartsWhatReadersRead(t *testing.T) {
	all, read := harness.All(), recorded.All()
	if len(all) != len(read) {
		t.Fatalf("%d harnesses start, %d are read", len(all), len(read))
	}
	for i, h := range all {
		if h.Name == "" || h.Name != read[i].Name || h.Read == nil || h.Start == nil {
			t.Errorf("harness %d: %q starts, %q is read (reader set: %v)", i, h.Name, read[i].Name, h.Read != nil)
		}
	}
}
