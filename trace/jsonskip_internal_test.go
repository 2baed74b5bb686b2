package trace

import (
	"math/rand/v2"
	"testing"
)

// TestSkipStringJumps: skipString, jumping from quote to quote, ends
// every string where reading it byte by byte does (escaped quotes, runs
// of backslashes, unterminated strings).
func TestSkipStringJumps(t *testing.T) {
	byteByByte := func(data []byte, i int) (int, error) {
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errShort
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`"\\ab`)
	for n := range 20000 {
		data := make([]byte, 1+r.IntN(24))
		data[0] = '"'
		for i := 1; i < len(data); i++ {
			data[i] = alphabet[r.IntN(len(alphabet))]
		}
		want, werr := byteByByte(data, 0)
		got, gerr := skipString(data, 0)
		if want != got || (werr == nil) != (gerr == nil) {
			t.Fatalf("case %d %q: skipString %d %v, byte by byte %d %v", n, data, got, gerr, want, werr)
		}
	}
}
