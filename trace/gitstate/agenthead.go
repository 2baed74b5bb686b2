package gitstate

import (
	"bufio"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// agentHead returns the commit HEAD of the agent's own repository at
// workTree/.git resolves to, or "" when there is none or it cannot be read.
// Everything there is the agent's: files are opened beneath the workspace
// through no symlink (beneath.go) and read with a small limit, and only a
// 40-hex answer is returned.
func agentHead(workTree string) string {
	ws, err := openWorkspace(workTree)
	if err != nil {
		return ""
	}
	defer ws.Close()
	head := readSmall(ws, ".git/HEAD")
	for range 5 { // symbolic refs may chain; git stops at 5 too
		ref, ok := strings.CutPrefix(head, "ref: ")
		if !ok {
			break
		}
		if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
			return ""
		}
		head = readSmall(ws, ".git/"+ref)
		if head == "" {
			head = packedRef(ws, ".git/packed-refs", ref)
		}
	}
	if _, ok := parseHash(head); ok {
		return head
	}
	return ""
}

// openAgentFile opens the workspace's regular file rel if it holds at
// most max bytes.
func openAgentFile(ws *workspace, rel string, max int64) *os.File {
	f, err := ws.open(rel, unix.O_RDONLY)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		f.Close()
		return nil
	}
	return f
}

// readSmall returns the first line of the workspace's regular file rel of
// at most 4 KB.
func readSmall(ws *workspace, rel string) string {
	f := openAgentFile(ws, rel, 4<<10)
	if f == nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4<<10))
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// packedRef looks ref up in the workspace's packed-refs file rel of at
// most 16 MB.
func packedRef(ws *workspace, rel, ref string) string {
	f := openAgentFile(ws, rel, 16<<20)
	if f == nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		hash, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref {
			return hash
		}
	}
	return ""
}
