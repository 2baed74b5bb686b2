package main

import (
	"context"

	"github.com/trajlab/traj/sandbox"
)

// SandboxCmd groups the sandbox commands.
type SandboxCmd struct {
	Check SandboxCheckCmd `cmd:"" help:"Say which sandbox providers work on this machine and which one traj run uses by default."`
	Image SandboxImageCmd `cmd:"" help:"Build the container sandbox's image offline from Debian (mmdebstrap), unless it exists."`
}

// SandboxCheckCmd is traj sandbox check.
type SandboxCheckCmd struct {
	Engine string `help:"Container engine binary (podman or docker); found on PATH when empty."`
}

// Run prints each provider's state; it fails when no isolating provider works.
func (c *SandboxCheckCmd) Run(ctx context.Context, g *Globals) error {
	return sandbox.WriteCheck(ctx, c.Engine, g.Stdout)
}

// SandboxImageCmd is traj sandbox image.
type SandboxImageCmd struct {
	Engine  string `help:"Container engine binary (podman or docker); found on PATH when empty."`
	Rebuild bool   `help:"Build even when the image exists."`
}

// Run builds the image when missing (or always with --rebuild) and prints its name.
func (c *SandboxImageCmd) Run(ctx context.Context, g *Globals) error {
	return sandbox.MakeImage(ctx, c.Engine, c.Rebuild, g.Stdout, g.Stderr)
}
