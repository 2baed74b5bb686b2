package playback

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/sandbox/gateway/model/calls"
)

func call(seq int, path, mdl, req, resp string, stream bool) model.Call {
	return model.Call{Seq: seq, Method: http.MethodPost, Path: path, Model: mdl, Status: 200, Stream: stream,
		Request: model.DigestOf([]byte(req), nil), Response: resp}
}

func body(mdl, text string) string {
	b, _ := json.Marshal(map[string]any{"model": mdl, "messages": []any{map[string]string{"role": "user", "content": text}}})
	return string(b)
}

// TestPlayback: each request gets its recorded answer verbatim; the same
// bytes first, else the earliest of its path and model (a divergence);
// each model keeps its own order; past the record a 400 and OnSpent,
// once.
func TestPlayback(t *testing.T) {
	const chat = "/v1/chat/completions"
	calls := []model.Call{
		call(1, chat, "demo", body("demo", "one"), "data: {\"a\":1}\n\ndata: [DONE]\n\n", true),
		call(2, chat, "small", body("small", "title"), `{"title":"t"}`, false),
		call(3, chat, "demo", body("demo", "two"), "data: {\"a\":2}\n\ndata: [DONE]\n\n", true),
		call(4, "/v1/messages", "claude", body("claude", "x"), "event: message_stop\ndata: {}\n\n", true),
	}
	var spent []string
	var mu sync.Mutex
	srv, err := New(calls, Options{OnSpent: func(d string) { mu.Lock(); spent = append(spent, d); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	post := func(path, b string) (int, string, string) {
		t.Helper()
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(out)
	}
	// The title request arrives first: it takes the small model's call.
	if code, ct, out := post(chat, body("small", "title")); code != 200 || out != calls[1].Response || ct != "application/json" {
		t.Fatalf("title: %d %s %q", code, ct, out)
	}
	// Call 3's bytes arrive before call 1's: the same bytes win.
	if code, ct, out := post(chat, body("demo", "two")); code != 200 || out != calls[2].Response || ct != "text/event-stream" {
		t.Fatalf("two: %d %s %q", code, ct, out)
	}
	// Other bytes: the earliest unplayed call of that model, a divergence.
	if _, _, out := post(chat, body("demo", "one, but another date")); out != calls[0].Response {
		t.Fatalf("diverged request got %q", out)
	}
	if _, _, out := post("/v1/messages", body("claude", "x")); out != calls[3].Response {
		t.Fatalf("messages got %q", out)
	}
	st := srv.Status()
	if st.Played != 4 || st.Remaining() != 0 || len(st.Divergences) != 1 || st.Divergences[0].Seq != 1 || st.Divergences[0].Request != 3 {
		t.Fatalf("status %+v", st)
	}
	// Past the record: refused, OnSpent once.
	for range 2 {
		if code, _, out := post(chat, body("demo", "three")); code != 400 || !strings.Contains(out, "source recorded 4, all played") {
			t.Fatalf("past the record: %d %q", code, out)
		}
	}
	if len(spent) != 1 {
		t.Fatalf("OnSpent called %d times", len(spent))
	}
}

// TestPlaybackRefuses: a model the source never called, and a response the
// gateway kept truncated, end the rerun rather than answer wrongly.
func TestPlaybackRefuses(t *testing.T) {
	c := call(1, "/v1/responses", "gpt", body("gpt", "a"), "event: x\n", true)
	for _, tc := range []struct {
		name, model, want string
		truncated         bool
		cut               int64
	}{
		{name: "other model", model: "other", want: `no unplayed recorded call is one (0 of 1 played)`},
		{name: "truncated", model: "gpt", truncated: true, want: "kept truncated"},
		// A record line too long to hold (model.MaxLineBytes) was read
		// with its strings cut.
		{name: "line too long", model: "gpt", truncated: true, cut: 300 << 20, want: "is a record line of 314572800 bytes, over the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			cc.ResponseTruncated, cc.Cut = tc.truncated, tc.cut
			var spent string
			srv, err := New([]model.Call{cc}, Options{OnSpent: func(d string) { spent = d }})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body(tc.model, "a"))))
			if rec.Code != 400 || !strings.Contains(spent, tc.want) {
				t.Fatalf("%d, spent %q; want 400 and %q", rec.Code, spent, tc.want)
			}
		})
	}
}

// TestLoad keeps only the calls the upstream answered.
func TestLoad(t *testing.T) {
	ok := call(1, "/v1/chat/completions", "demo", "a", "{}", false)
	lines := []model.Call{ok,
		{Seq: 2, Method: "POST", Path: "/v1/chat/completions", Status: 499, Error: "client closed the request"},
		{Seq: 3, Method: "POST", Path: "/v1/chat/completions", Status: 400, Error: "refused: the run is over"},
		{Seq: 4, Method: "POST", Path: "/v1/chat/completions", Status: 502, Error: "POST x: connection refused"},
		{Seq: 5, Method: "POST", Path: "/v1/chat/completions", Status: 503, Response: `{"error":{}}`},
	}
	var b strings.Builder
	for _, c := range lines {
		j, _ := json.Marshal(c)
		b.Write(append(j, '\n'))
	}
	p := filepath.Join(t.TempDir(), "model_calls.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	calls, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, c := range calls {
		seqs = append(seqs, c.Seq)
	}
	if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 5 {
		t.Fatalf("loaded %v, want [1 5] (an upstream's 503 is an answer too)", seqs)
	}
}

// TestPlaybackVarying: a request that differs from the recorded one only
// in what the harness documents as varying (OpenCode's made-up session
// ids) is the same request: no divergence. Anything more is one.
func TestPlaybackVarying(t *testing.T) {
	varying := regexp.MustCompile(`\bses_[0-9a-zA-Z]{26}\b`)
	const path = "/v1/chat/completions"
	rec := body("demo", `<task id="ses_deb3ea526ffeCeQZGJOAZQt05K" state="completed">ok</task>`)
	c := call(1, path, "demo", "", "{}", false)
	c.Request = model.DigestOf([]byte(rec), varying)
	c2 := c
	c2.Seq = 2
	srv, err := New([]model.Call{c, c2}, Options{Varying: varying})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{
		body("demo", `<task id="ses_deb3df45effeLK9srHgVeJgDvk" state="completed">ok</task>`),
		body("demo", `<task id="ses_deb3df45effeLK9srHgVeJgDvk" state="completed">not ok</task>`),
	} {
		rr := httptest.NewRecorder()
		srv.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, path, strings.NewReader(b)))
		if rr.Code != 200 {
			t.Fatalf("%d %s", rr.Code, rr.Body)
		}
	}
	if d := srv.Status().Divergences; len(d) != 1 || d[0].Request != 2 {
		t.Fatalf("divergences %+v; want only the second request (its text differs)", d)
	}
}

// TestPlaybackForkRaceLagged attacks a fork with a source whose
// parts_before lag (failure injection: the harness asked for its next
// answer before traj recorded the part that ended, as Codex does under
// load). The trace attributes parts 1..3 to call 1, 4..5 to call 2, 6 to
// call 3; call 2's parts_before says 1. A fork at part 3 plays call 1
// alone: call 2 goes to the fork's new upstream, as the attribution
// places it, never from the record.
func TestPlaybackForkRaceLagged(t *testing.T) {
	const chat = "/v1/chat/completions"
	lagged := func(c model.Call, n int) model.Call { c.PartsBefore = &n; return c }
	recorded := []model.Call{
		lagged(call(1, chat, "demo", body("demo", "one"), `{"recorded":1}`, false), 0),
		lagged(call(2, chat, "demo", body("demo", "two"), `{"recorded":2}`, false), 1),
		lagged(call(3, chat, "demo", body("demo", "three"), `{"recorded":3}`, false), 4),
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"fresh":true}`)
	}))
	defer upstream.Close()
	for _, tc := range []struct {
		name   string
		forkAt int
		want   []string // the answers to requests one, two, three
	}{
		{name: "at the end of call 1", forkAt: 3, want: []string{`{"recorded":1}`, `{"fresh":true}`, `{"fresh":true}`}},
		{name: "at the end of call 2", forkAt: 5, want: []string{`{"recorded":1}`, `{"recorded":2}`, `{"fresh":true}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := New(recorded, Options{ForkAt: tc.forkAt, Then: upstream.URL + "/v1",
				Placed: calls.PlaceParts([]int{1, 1, 1, 2, 2, 3})})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			for i, text := range []string{"one", "two", "three"} {
				resp, err := http.Post(ts.URL+chat, "application/json", strings.NewReader(body("demo", text)))
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(out) != tc.want[i] {
					t.Errorf("request %q answered %s, want %s", text, out, tc.want[i])
				}
			}
		})
	}
}
