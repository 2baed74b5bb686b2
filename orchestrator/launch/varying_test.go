package launch

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/trajlab/traj/orchestrator/groundtruth"
	"github.com/trajlab/traj/sandbox/claudecode"
	"github.com/trajlab/traj/sandbox/codex"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/sandbox/harness"
)

// TestVaryingRequests: testdata/requests holds the model requests of two
// runs of the e2e script with each CLI harness, as the model gateway
// received them. They differ byte for byte from the first call; with what
// the harness documents as varying and the run_tests answers' varying
// fields blanked (the gateway's and the playback's Varying), every call
// is the same, but for what the agent's own commands printed of the
// world: the script runs `ls -la`, whose file times the test blanks too.
// A real difference (a tool's name) still shows.
func TestVaryingRequests(t *testing.T) {
	lsTimes := regexp.MustCompile(`[A-Z][a-z]{2} [ 0-9]{2} [0-9]{2}:[0-9]{2} `)
	for _, name := range []string{claudecode.HarnessName, codex.HarnessName} {
		t.Run(name, func(t *testing.T) {
			h, err := harness.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			varying := eitherOf(h.Varying, groundtruth.AnswerVarying)
			rawDiffer := 0
			calls := 0
			for call := 1; ; call++ {
				a, okA := readRequest(t, name, 1, call)
				b, okB := readRequest(t, name, 2, call)
				if !okA || !okB {
					break
				}
				calls++
				if !model.DigestOf(a, nil).Same(model.DigestOf(b, nil)) {
					rawDiffer++
				}
				a, b = lsTimes.ReplaceAll(a, []byte("… ")), lsTimes.ReplaceAll(b, []byte("… "))
				da, db := model.DigestOf(a, varying), model.DigestOf(b, varying)
				if !da.Same(db) {
					t.Errorf("call %d: the two runs' requests differ with the varying fields blanked", call)
				}
				// A real difference is not blanked.
				changed := bytes.Replace(b, []byte(`run_tests"`), []byte(`run_TESTS"`), 1)
				if bytes.Equal(changed, b) {
					t.Fatalf("call %d: the request does not name the run_tests tool", call)
				}
				if da.Same(model.DigestOf(changed, varying)) {
					t.Errorf("call %d: a renamed tool is taken for the same request", call)
				}
			}
			if calls < 4 || rawDiffer != calls {
				t.Fatalf("%d calls, %d of them differing byte for byte; want at least 4, all differing (else the test shows nothing)", calls, rawDiffer)
			}
		})
	}
}

func readRequest(t *testing.T, harness string, run, call int) ([]byte, bool) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "requests", fmt.Sprintf("%s-run%d-call%d.json.gz", harness, run, call)))
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}
