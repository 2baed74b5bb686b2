package export

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestZstdCodecSameBytes: the export's codec writes what parquet-go's
// own ZSTD codec writes for any page up to pageWindow (so a file is the
// same as before), and reads back what it wrote.
func TestZstdCodecSameBytes(t *testing.T) {
	c, err := newZstdCodec()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"int ", "main", "(void)", " {\n", "return ", "0;", "}\n", "cc: ", "error", "\t"}
	text := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.Bytes()[:n]
	}
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for _, tc := range []struct {
		name string
		page []byte
	}{
		{"empty", nil},
		{"small", []byte("hello")},
		{"text 300 KB", text(300 << 10)},
		{"noise 200 KB", noise(200 << 10)},
		{"text 1 MB", text(pageWindow)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := parquet.Zstd.Encode(nil, tc.page)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Encode(nil, tc.page)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bytes compressed to %d, parquet-go's codec %d (first difference at %s)", len(tc.page), len(got), len(want), firstDiff(got, want))
			}
			back, err := c.Decode(nil, got)
			if err != nil || !bytes.Equal(back, tc.page) {
				t.Fatalf("decode: %v (%d bytes back of %d)", err, len(back), len(tc.page))
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprint(i)
		}
	}
	return "the end"
}
