package main

import (
	"context"
	"os"

	"github.com/trajlab/traj/replay/view"
	"github.com/trajlab/traj/trace/store/location"
)

// ViewCmd serves the web viewer of a store on loopback.
type ViewCmd struct {
	Store    string `help:"Store to view: a folder, file:///path or s3://bucket/prefix (default ./runs or TRAJ_STORE)."`
	Addr     string `help:"Address to listen on (loopback only)." default:"127.0.0.1:7780"`
	CacheDir string `help:"Folder for downloads, part indexes and history clones (default: the user cache folder, traj/view)." type:"path"`
}

func (c *ViewCmd) Run(ctx context.Context, g *Globals) error {
	opts := view.Options{StoreURL: location.Choose(c.Store, os.Getenv), CacheDir: c.CacheDir, Logger: g.Logger}
	return usageExit(view.Run(ctx, opts, c.Addr, g.Stdout))
}
