package sandbox

import (
	"context"
	"fmt"
	"io"

	"github.com/trajlab/traj/sandbox/image"
)

// WriteCheck is `traj sandbox check`: it writes whether each provider
// works here (engine: the container engine binary, "" found on PATH) and
// which one a run takes by default; it fails when no isolating provider
// works.
func WriteCheck(ctx context.Context, engine string, w io.Writer) error {
	if err := BwrapWorks(ctx); err != nil {
		fmt.Fprintf(w, "bwrap:     no: %v\n", err)
	} else {
		fmt.Fprintln(w, "bwrap:     works")
	}
	if _, err := ContainerWorks(ctx, engine, ""); err != nil {
		fmt.Fprintf(w, "container: no: %v\n", err)
	} else {
		fmt.Fprintf(w, "container: works (image %s)\n", image.Name())
	}
	fmt.Fprintln(w, "local:     works (no isolation; only with --sandbox local)")
	p, err := Default(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "default:   %s\n", p)
	return nil
}

// MakeImage is `traj sandbox image`: it builds the container sandbox's
// image when missing (always with rebuild), the build's output to
// stderr, and writes its name to stdout.
func MakeImage(ctx context.Context, engine string, rebuild bool, stdout, stderr io.Writer) error {
	e, _, err := FindEngine(ctx, engine)
	if err != nil {
		return err
	}
	if rebuild {
		if err := image.Build(ctx, e, CacheDir(), stderr); err != nil {
			return err
		}
	} else if _, err := image.Ensure(ctx, e, CacheDir(), stderr); err != nil {
		return err
	}
	fmt.Fprintln(stdout, image.Name())
	return nil
}
