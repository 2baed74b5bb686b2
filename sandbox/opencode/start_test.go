package opencode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/sandbox"
)

// TestStartFailures runs Start with failure-injecting stand-ins for the
// OpenCode binary (shell scripts) and checks the error tells why, with the
// log's tail and without the password.
func TestStartFailures(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []string
	}{
		{"exits at once", "echo boom: bad config \"$OPENCODE_SERVER_PASSWORD\" >&2; exit 1",
			[]string{"exited before it was ready", "boom: bad config", "[redacted]"}},
		{"never listens", "echo starting; exec sleep 60",
			[]string{"not ready after", "no listening line", "starting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "fake-opencode")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tt.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			sb, err := sandbox.NewLocal(context.Background(), sandbox.LocalOptions{TrajectoryDir: filepath.Join(dir, "traj")})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Stop(context.Background())
			_, err = Start(context.Background(), sb, ServerOptions{
				Binary: bin, Config: Config{Model: "a/b"}, ReadyTimeout: 1500 * time.Millisecond, Grace: 200 * time.Millisecond,
			})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if _, err := os.Stat(PasswordFile(sb.TrajectoryDir())); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("password file left after a failed start: %v", err)
			}
		})
	}
	if _, err := Start(context.Background(), nil, ServerOptions{}); !errors.Is(err, ErrNoBinary) {
		t.Fatalf("no binary: %v", err)
	}
}
