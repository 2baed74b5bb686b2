package image_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/image"
)

func TestBases(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"one", "FROM debian:bookworm\nRUN true\n", []string{"debian:bookworm"}},
		{"flags and stage", "FROM --platform=linux/amd64 debian:bookworm-slim AS build\nRUN true\nFROM build\nfrom debian:trixie as final\n", []string{"debian:bookworm-slim", "debian:trixie"}},
		{"scratch", "FROM scratch\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := image.Bases([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var refs []string
			for _, b := range got {
				refs = append(refs, b.Ref)
			}
			if strings.Join(refs, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("bases %v, want %v", refs, tc.want)
			}
		})
	}
	if _, err := image.Bases([]byte("ARG V=1\nFROM debian:$V\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("FROM with a build argument: %v, want an error naming line 2", err)
	}
}

func TestDebianRef(t *testing.T) {
	for ref, suite := range map[string]string{"debian:bookworm": "bookworm", "docker.io/library/debian:12-slim": "bookworm",
		"debian:trixie": "trixie", "debian": "", "debian:latest": "", "ubuntu:24.04": "", "debian:bookworm@sha256:00": ""} {
		_, s, ok := image.DebianRef(ref)
		if s != suite || ok != (suite != "") {
			t.Errorf("DebianRef(%q) = %q %v, want %q", ref, s, ok, suite)
		}
	}
}

// TestBuildContextOffline builds task images with the engine, offline
// but for Debian's mirror: a Debian FROM built locally and an apt-get
// RUN work (and the second build is the cached image), a pip RUN fails
// naming its instruction, a FROM that needs a registry fails naming its
// line.
func TestBuildContextOffline(t *testing.T) {
	if os.Getenv("TRAJ_CONTAINER_TESTS") == "" && testing.Short() {
		t.Skip("container engine test")
	}
	ctx := context.Background()
	e, _, err := sandbox.FindEngine(ctx, "")
	if err != nil {
		t.Skipf("no container engine: %v", err)
	}
	cache := t.TempDir()
	b := image.ContextBuild{Dir: "testdata/apt", Repository: "localhost/traj-test-context", CacheDir: cache}
	var log strings.Builder
	built, err := image.BuildContext(ctx, e, b, &log)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	out, err := e.Run(ctx, 2*time.Minute, nil, "run", "--rm", "--network", "none", built.Name, "python3", "-m", "pytest", "--version")
	if err != nil || !strings.Contains(out, "pytest") {
		t.Fatalf("pytest in the built image: %v %s", err, out)
	}
	log.Reset()
	again, err := image.BuildContext(ctx, e, b, &log)
	if err != nil || again != built || strings.Contains(log.String(), "building") {
		t.Fatalf("second build: %v %+v (first %+v), log %q: want the cached image", err, again, built, log.String())
	}

	_, err = image.BuildContext(ctx, e, image.ContextBuild{Dir: "testdata/pip", Repository: "localhost/traj-test-context", CacheDir: cache}, nil)
	if err == nil || !strings.Contains(err.Error(), "RUN pip install --break-system-packages --no-cache-dir requests==2.32.3 failed") {
		t.Fatalf("pip build: %v, want a failure naming the pip instruction", err)
	}
	_, err = image.BuildContext(ctx, e, image.ContextBuild{Dir: "testdata/registry", Repository: "localhost/traj-test-context", CacheDir: cache}, nil)
	if err == nil || !strings.Contains(err.Error(), "line 1: FROM python:3.12-slim") {
		t.Fatalf("registry build: %v, want a failure naming the FROM line", err)
	}
}
