package launch

import (
	"context"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
)

func TestTaskRoomApply(t *testing.T) {
	closed := &TaskRoom{Image: "img", Workdir: "/app", CPUs: 1, Memory: 1 << 30}
	open := &TaskRoom{Image: "img", Workdir: "/app", AllowInternet: true}
	for _, tc := range []struct {
		name string
		room *TaskRoom
		in   SandboxOptions
		want SandboxOptions
		err  string
	}{
		{"defaults", closed, SandboxOptions{}, SandboxOptions{Provider: "container", Image: "img", WorkspaceInside: "/app",
			Network: sandbox.NetworkGateways, Limits: sandbox.Limits{CPUs: 1, Memory: 1 << 30}}, ""},
		{"user limits kept", closed, SandboxOptions{Limits: sandbox.Limits{CPUs: 2, Memory: 5}, Network: sandbox.NetworkNone},
			SandboxOptions{Provider: "container", Image: "img", WorkspaceInside: "/app", Network: sandbox.NetworkNone,
				Limits: sandbox.Limits{CPUs: 2, Memory: 5}}, ""},
		{"internet allowed", open, SandboxOptions{Network: sandbox.NetworkFull}, SandboxOptions{Provider: "container", Image: "img",
			WorkspaceInside: "/app", Network: sandbox.NetworkFull}, ""},
		{"full refused", closed, SandboxOptions{Network: sandbox.NetworkFull}, SandboxOptions{}, "allow_internet = false"},
		{"bwrap without a root file system", closed, SandboxOptions{Provider: "bwrap"}, SandboxOptions{}, "no root file system"},
		{"bwrap over the image", &TaskRoom{Image: "img", Workdir: "/app", RootFS: func(context.Context) (string, error) { return "/r", nil }},
			SandboxOptions{Provider: "bwrap"}, SandboxOptions{Provider: "bwrap", Image: "img", WorkspaceInside: "/app", RootFS: "/r",
				Network: sandbox.NetworkGateways}, ""},
		{"local refused", closed, SandboxOptions{Provider: "local"}, SandboxOptions{}, "--sandbox container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.room.apply(t.Context(), tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("apply: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.Provider != tc.want.Provider || got.Image != tc.want.Image || got.WorkspaceInside != tc.want.WorkspaceInside ||
				got.Network != tc.want.Network || got.Limits != tc.want.Limits || got.RootFS != tc.want.RootFS {
				t.Fatalf("apply = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
