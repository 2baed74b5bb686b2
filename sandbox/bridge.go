package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/trajlab/traj/sandbox/relay"
	"golang.org/x/sys/unix"
)

// Inside paths of the bridge between traj and an isolated sandbox.
const (
	// HelperPath is where bwrap and container sandboxes show the sandbox
	// helper (Options.Helper, cmd/traj-sandbox): the relay and the tool stub.
	HelperPath  = "/opt/traj/bin/" + HelperName
	bridgeIn    = "/run/traj/in"
	bridgeOut   = "/run/traj/out"
	gatewaySock = "gateway.sock"
	// lifelineSock is held open by traj: its relays end their service
	// when it closes (traj died), whatever the container engine does.
	lifelineSock = "lifeline.sock"
)

// bridge holds the two socket folders an isolated sandbox shares with
// traj: in/ (read-write inside: each service's relay listens there) and
// out/ (read-only inside: traj's gateway listens there).
type bridge struct {
	in, out string
	// dirFDs keep O_PATH handles of in/ and out/ so socket paths stay
	// short (/proc/self/fd/N/…): a Unix socket path is limited to 107
	// bytes and trajectory folders can be deeper.
	inFD, outFD *os.File
	gw          *relay.Gateway
	lifeline    net.Listener
	held        []net.Conn

	mu    sync.Mutex
	socks map[string]string // service name → in-socket (host, short form)
}

func newBridge(dir string, policy Network, gateways []string) (*bridge, error) {
	b := &bridge{in: filepath.Join(dir, "bridge", "in"), out: filepath.Join(dir, "bridge", "out"), socks: map[string]string{}}
	for _, d := range []string{b.in, b.out} {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
	}
	var err error
	if b.inFD, err = os.OpenFile(b.in, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	if b.outFD, err = os.OpenFile(b.out, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
		b.inFD.Close()
		return nil, fmt.Errorf("bridge: %w", err)
	}
	if b.lifeline, err = net.Listen("unix", b.short(b.outFD, lifelineSock)); err != nil {
		b.close()
		return nil, fmt.Errorf("bridge: lifeline: %w", err)
	}
	go b.hold()
	if policy == NetworkGateways && len(gateways) > 0 {
		for _, g := range gateways {
			if err := checkGateway(g); err != nil {
				b.close()
				return nil, err
			}
		}
		if b.gw, err = relay.ListenGateway(b.short(b.outFD, gatewaySock), gateways); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// hold accepts lifeline connections and keeps them open until close (or
// until traj's process ends, when the kernel closes them).
func (b *bridge) hold() {
	for {
		c, err := b.lifeline.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.held = append(b.held, c)
		b.mu.Unlock()
	}
}

// checkGateway accepts loopback host:port endpoints only: a gateway is
// something traj serves on this machine.
func checkGateway(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return fmt.Errorf("gateway %q: want 127.x.x.x:PORT (traj serves gateways on loopback)", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("gateway %q: bad port", addr)
	}
	return nil
}

func (b *bridge) short(dir *os.File, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + name
}

// relayArgs is the relay command line inside the sandbox for service
// name, in front of command.
func (b *bridge) relayArgs(name string, policy Network, gateways []string, command []string) []string {
	b.mu.Lock()
	b.socks[name] = b.short(b.inFD, name+".sock")
	b.mu.Unlock()
	out := ""
	if policy == NetworkGateways && b.gw != nil {
		out = bridgeOut + "/" + gatewaySock
	}
	return append([]string{HelperPath, relay.Command}, relay.Args(bridgeIn+"/"+name+".sock", bridgeOut+"/"+lifelineSock, out, gateways, command)...)
}

// dial connects to 127.0.0.1:PORT inside the sandbox through the relay of
// the newest running service that answers.
func (b *bridge) dial(ctx context.Context, names []string, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" {
		return nil, fmt.Errorf("dial %s %s: only tcp", network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return nil, fmt.Errorf("dial %s: only 127.0.0.1 inside a sandbox", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	var errs []error
	for _, n := range names {
		b.mu.Lock()
		sock := b.socks[n]
		b.mu.Unlock()
		if sock == "" {
			continue
		}
		c, err := relay.Dial(ctx, sock, p)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("dial %s: no service running in the sandbox", addr)
	}
	return nil, fmt.Errorf("dial %s: %w", addr, errors.Join(errs...))
}

func (b *bridge) close() error {
	var err error
	if b.gw != nil {
		err = b.gw.Close()
	}
	if b.lifeline != nil {
		b.lifeline.Close()
	}
	b.mu.Lock()
	for _, c := range b.held {
		c.Close()
	}
	b.held = nil
	b.mu.Unlock()
	if b.inFD != nil {
		b.inFD.Close()
	}
	if b.outFD != nil {
		b.outFD.Close()
	}
	return err
}
