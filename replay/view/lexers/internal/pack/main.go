// Command pack writes the lexers package's definitions.tar.zst: chroma's
// XML lexer definitions (lexers/embedded/*.xml) of the chroma version
// this module requires, in name order with no time or owner, so the
// same version packs to the same bytes. Run it with go generate in
// replay/view/lexers after changing chroma's version in go.mod.
package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
)

func main() {
	if err := run("definitions.tar.zst"); err != nil {
		fmt.Fprintln(os.Stderr, "pack lexers:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/alecthomas/chroma/v2").Output()
	if err != nil {
		return fmt.Errorf("find chroma's module: %w", err)
	}
	paths, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "lexers", "embedded", "*.xml"))
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("chroma's lexer definitions: none found (%v)", err)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.Base(p), Mode: 0o644, Size: int64(len(data)), Format: tar.FormatUSTAR}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	fmt.Printf("packed %d lexer definitions into %s (%d bytes)\n", len(paths), out, buf.Len())
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
