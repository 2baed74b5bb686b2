// Command traj-sandbox is the one traj program a sandbox shows: the tool
// stub a harness loads (tool-stub), the relay in front of each service
// (sandbox-relay) and the guard of each bwrap (sandbox-guard, run on the
// host). It is kept apart from traj's own binary so that no room holds
// what traj holds: it links no environment, so no suite and no
// expectation (TestNoSuiteInside checks its dependencies), and it has no
// command that runs tests. traj finds it beside its own executable
// (sandbox.FindHelper); `make build` puts both in bin/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/trajlab/traj/sandbox/gateway/tool"
	"github.com/trajlab/traj/sandbox/relay"
	"github.com/trajlab/traj/sandbox/xec"
)

// version is set at link time (-ldflags "-X main.version=…").
var version = "dev"

// toolStubCommand is the stub's command name (launch starts it so).
const toolStubCommand = "tool-stub"

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	switch os.Args[1] {
	case relay.Command:
		os.Exit(relay.Main(os.Args[2:]))
	case xec.GuardCommand:
		os.Exit(xec.GuardMain(os.Args[2:]))
	case toolStubCommand:
		os.Exit(toolStub(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	case "--version", "version":
		fmt.Println(version)
	default:
		usage(os.Stderr)
		os.Exit(2)
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "traj-sandbox: what traj runs inside a sandbox, never typed by a person:\n  %s --gateway URL (token in %s)\n  %s …\n  %s -- COMMAND…\n",
		toolStubCommand, tool.TokenEnv, relay.Command, xec.GuardCommand)
}

// toolStub serves the tool gateway's tools over stdio: what a harness in
// the sandbox loads as its tests MCP server.
func toolStub(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(toolStubCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	gateway := fs.String("gateway", "", "the tool gateway's base URL (http://127.0.0.1:PORT)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil || *gateway == "" {
		fmt.Fprintln(stderr, "tool-stub: want --gateway URL and a known --log-level")
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	token := os.Getenv(tool.TokenEnv)
	if token == "" {
		fmt.Fprintln(stderr, "tool-stub: "+tool.TokenEnv+" is not set")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &tool.Stub{URL: *gateway, Token: token, Logger: logger, Version: version}
	logger.Info("tool stub on stdio", "gateway", *gateway)
	if err := s.ServeStdio(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "tool-stub:", err)
		return 1
	}
	return 0
}
