// Package relay connects a sandbox's own loopback network to traj across
// the sandbox boundary, through Unix sockets in folders the sandbox
// mounts (a Unix socket works across network namespaces; a TCP port on
// the sandbox's loopback does not).
//
// Inside the sandbox, the sandbox helper runs as `traj-sandbox
// sandbox-relay` (Main) in front of each service:
//
//   - it listens on the in-socket; a client (traj, outside) writes
//     "PORT\n", the relay connects to 127.0.0.1:PORT inside the sandbox and
//     answers "OK\n" (or "ERR reason\n"), then copies bytes both ways. This
//     is how traj reaches the OpenCode server whatever the network policy.
//   - for each gateway address 127.0.0.1:PORT it listens on that address
//     inside the sandbox and forwards each connection to the out-socket with
//     "ADDR\n"; traj's Gateway, outside, connects only to the addresses it
//     was given. This is the `gateways` network policy: the agent reaches
//     the model endpoint (and later the tool gateway) and nothing else.
//   - it runs the service's command as its child, passes SIGTERM and
//     SIGINT on, and exits with the child's status.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header limits: a header is one short line, read within headerTimeout.
const (
	maxHeader     = 64
	headerTimeout = 10 * time.Second
	dialTimeout   = 10 * time.Second
)

// Dial connects, through the relay listening on sock, to 127.0.0.1:port
// inside the sandbox.
func Dial(ctx context.Context, sock string, port int) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("relay %s: %w", sock, err)
	}
	if err := handshake(ctx, c, strconv.Itoa(port)); err != nil {
		c.Close()
		return nil, fmt.Errorf("relay %s to port %d: %w", sock, port, err)
	}
	return c, nil
}

// handshake writes the header and reads the relay's answer.
func handshake(ctx context.Context, c net.Conn, header string) error {
	deadline := time.Now().Add(headerTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, header+"\n"); err != nil {
		return err
	}
	line, err := readLine(c)
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	if line != "OK" {
		return errors.New(strings.TrimPrefix(line, "ERR "))
	}
	return nil
}

// readLine reads one header line byte by byte (no buffering past it: the
// rest of the stream belongs to the relayed connection).
func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) <= maxHeader {
		if _, err := io.ReadFull(r, one); err != nil {
			return "", err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
	return "", errors.New("header too long")
}

// Splice copies both ways until both directions are done, then closes
// both connections.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// Gateway serves the out-socket outside the sandbox: each connection names
// a host address and is connected to it only if it is in allowed.
type Gateway struct {
	ln      net.Listener
	allowed map[string]bool
	wg      sync.WaitGroup
}

// ListenGateway listens on the Unix socket sock (removing a stale one)
// and serves connections to the allowed addresses until Close.
func ListenGateway(sock string, allowed []string) (*Gateway, error) {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("gateway socket: %w", err)
	}
	g := &Gateway{ln: ln, allowed: map[string]bool{}}
	for _, a := range allowed {
		g.allowed[a] = true
	}
	g.wg.Add(1)
	go g.serve()
	return g, nil
}

func (g *Gateway) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.handle(c)
	}
}

func (g *Gateway) handle(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(headerTimeout))
	addr, err := readLine(c)
	if err != nil {
		c.Close()
		return
	}
	if !g.allowed[addr] {
		fmt.Fprintf(c, "ERR %q is not a gateway of this sandbox\n", addr)
		c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", addr, dialTimeout)
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
}

// Close stops accepting connections (relayed ones run to their end).
func (g *Gateway) Close() error {
	err := g.ln.Close()
	g.wg.Wait()
	return err
}
