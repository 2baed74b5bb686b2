package relay

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// Command is the name traj's CLI gives Main (hidden: only sandboxes run it).
const Command = "sandbox-relay"

// Args are Main's arguments for a service: the in-socket, traj's
// lifeline socket, the out-socket and gateways (none when out is empty),
// then the service's command.
func Args(in, lifeline, out string, gateways []string, command []string) []string {
	args := []string{"--in", in}
	if lifeline != "" {
		args = append(args, "--lifeline", lifeline)
	}
	if out != "" {
		args = append(args, "--out", out)
		for _, g := range gateways {
			args = append(args, "--gateway", g)
		}
	}
	return append(append(args, "--"), command...)
}

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// Main runs inside a sandbox: the relay's listeners, then the command
// after "--" as a child; it returns the child's exit status.
func Main(args []string) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	in := fs.String("in", "", "Unix socket to listen on for connections from traj")
	out := fs.String("out", "", "Unix socket of traj's gateway")
	lifeline := fs.String("lifeline", "", "Unix socket of traj's lifeline: when it closes, traj is gone and the service is killed")
	var gws multi
	fs.Var(&gws, "gateway", "127.0.0.1:PORT to listen on inside and forward to the gateway (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmdline := fs.Args()
	if len(cmdline) == 0 || *in == "" {
		fmt.Fprintln(os.Stderr, "sandbox-relay: usage: sandbox-relay --in SOCK [--out SOCK --gateway ADDR…] -- COMMAND…")
		return 2
	}
	if err := listenIn(*in); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-relay:", err)
		return 1
	}
	for _, g := range gws {
		if err := listenGateway(g, *out); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox-relay:", err)
			return 1
		}
	}
	var gone <-chan struct{}
	if *lifeline != "" {
		c, err := net.DialTimeout("unix", *lifeline, dialTimeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox-relay: lifeline:", err)
			return 1
		}
		g := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, c)
			close(g)
		}()
		gone = g
	}
	return run(cmdline, gone)
}

// listenIn serves the in-socket: "PORT\n" → 127.0.0.1:PORT inside.
func listenIn(sock string) error {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen %s: %w", sock, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.SetDeadline(time.Now().Add(headerTimeout))
				line, err := readLine(c)
				port, perr := strconv.Atoi(line)
				if err != nil || perr != nil || port <= 0 || port > 65535 {
					io.WriteString(c, "ERR bad port\n")
					c.Close()
					return
				}
				up, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", line), dialTimeout)
				if err != nil {
					fmt.Fprintf(c, "ERR %v\n", err)
					c.Close()
					return
				}
				_ = c.SetDeadline(time.Time{})
				if _, err := io.WriteString(c, "OK\n"); err != nil {
					c.Close()
					up.Close()
					return
				}
				Splice(c, up)
			}()
		}
	}()
	return nil
}

// listenGateway listens on addr inside the sandbox and forwards each
// connection to traj's gateway socket.
func listenGateway(addr, out string) error {
	if out == "" {
		return errors.New("--gateway needs --out")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.DialTimeout("unix", out, dialTimeout)
				if err != nil {
					c.Close()
					return
				}
				if err := handshakeNoCtx(up, addr); err != nil {
					c.Close()
					up.Close()
					return
				}
				Splice(c, up)
			}()
		}
	}()
	return nil
}

func handshakeNoCtx(c net.Conn, header string) error {
	_ = c.SetDeadline(time.Now().Add(headerTimeout))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, header+"\n"); err != nil {
		return err
	}
	line, err := readLine(c)
	if err != nil {
		return err
	}
	if line != "OK" {
		return errors.New(line)
	}
	return nil
}

// run starts the command with the relay's stdio and environment, passes
// SIGTERM, SIGINT and SIGHUP on, kills it when gone closes (traj died:
// a container engine keeps a container running without its client), and
// returns its exit status.
//
// Not through sandbox/xec: the relay is the command's parent inside the
// sandbox and hands it the relay's own stdin, stdout and stderr (the
// engine's pipes to traj), where xec captures output or sends it to a log;
// it stays in the relay's process group so the relay's signals reach it as
// they are passed on, with the parent-death signal as xec would set.
func run(cmdline []string, gone <-chan struct{}) int {
	cmd := exec.Command(cmdline[0], cmdline[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The child dies with the relay, even by SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-relay:", err)
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	if gone != nil {
		go func() {
			<-gone
			fmt.Fprintln(os.Stderr, "sandbox-relay: traj is gone; stopping")
			_ = cmd.Process.Kill()
			os.Exit(137)
		}()
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "sandbox-relay:", err)
		return 1
	}
}
