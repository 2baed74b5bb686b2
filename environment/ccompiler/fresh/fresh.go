package fresh

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"time"
)

// Version names the generator and the oracle's rules: the same seed gives
// the same programs under one Version. It is part of the C environment's
// version, so cached results never cross a change of it.
const Version = "fresh/1"

// Defaults.
const (
	// PerLevel is the number of programs of each level.
	PerLevel = 8
	// Levels are the levels a suite has (why no Csmith level 5: doc.go).
	Levels = 4
	// attempts bounds the regenerations of one program the oracle drops.
	attempts = 8
	// DefaultTimeout bounds each oracle compile and run.
	DefaultTimeout = 60 * time.Second
)

// Program is one generated program with the oracle's expectation.
type Program struct {
	// Name is "level_<n>/prog_<k>.c" (k from 1, two digits): the same
	// for every seed, so per-case results line up across evaluations.
	Name  string
	Level int
	// Source is the program as the compiler under test sees it.
	Source string
	// ExitCode and Stdout are what gcc's program gave, at -O0 and -O2
	// alike.
	ExitCode int
	Stdout   string
}

// Seed is an evaluation's seed: HMAC-SHA256 keyed by secret over the
// generator's Version and digest (the artifact's, or the tree's). Without
// the secret nobody can derive it, so nobody can generate an artifact's
// programs before it is evaluated; with the same secret and digest it is
// the same, so one artifact always gets the same programs.
func Seed(secret []byte, digest string) []byte {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s\n%s", Version, digest)
	return m.Sum(nil)
}

// Options tune Generate. Zero values mean the defaults.
type Options struct {
	// PerLevel is the number of programs of each level (default PerLevel).
	PerLevel int
	// GCC is the oracle compiler (default "gcc").
	GCC string
	// TempDir holds the oracle's folder (default os.TempDir()).
	TempDir string
	// Timeout bounds each oracle compile and run (default DefaultTimeout).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.PerLevel <= 0 {
		o.PerLevel = PerLevel
	}
	if o.GCC == "" {
		o.GCC = "gcc"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// slot is one program's place: its level, index and attempt.
type slot struct{ level, index, attempt int }

func (s slot) name() string { return fmt.Sprintf("level_%d/prog_%02d.c", s.level, s.index+1) }

// rng is the slot's random source: ChaCha8 keyed by SHA-256 of the seed
// and the slot, so each program depends on the seed and its place only.
func (s slot) rng(seed []byte) *mrand.Rand {
	h := sha256.New()
	h.Write(seed)
	var b [12]byte
	binary.BigEndian.PutUint32(b[0:], uint32(s.level))
	binary.BigEndian.PutUint32(b[4:], uint32(s.index))
	binary.BigEndian.PutUint32(b[8:], uint32(s.attempt))
	h.Write(b[:])
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return mrand.New(mrand.NewChaCha8(key))
}

// candidate is the source (file-scope names marked, see render) of the
// program in slot (level 1..4) for seed before the oracle judges it.
func candidate(seed []byte, s slot) string {
	return generate(s.level, s.rng(seed))
}

// Generate returns the programs of seed, level by level, each with gcc's
// result. A program gcc refuses, whose result differs between -O0 and
// -O2, that exits 0 with no output (what a program ignoring its input
// would do) or that gcc's program does not finish is dropped and its
// slot generated again (next attempt); after attempts tries the slot is
// left out, so a suite may hold fewer programs (never seen in practice).
func Generate(ctx context.Context, seed []byte, opts Options) ([]Program, error) {
	o := opts.withDefaults()
	var pending []slot
	for l := 1; l <= Levels; l++ {
		for i := range o.PerLevel {
			pending = append(pending, slot{level: l, index: i})
		}
	}
	var out []Program
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, dropped, err := judge(ctx, seed, pending, o)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		pending = pending[:0]
		for _, s := range dropped {
			if s.attempt+1 < attempts {
				s.attempt++
				pending = append(pending, s)
			}
		}
	}
	sortPrograms(out)
	return out, nil
}
