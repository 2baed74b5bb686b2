package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Hit is one part that matched a search.
type Hit struct {
	Part int `json:"part"`
	// Snippet is the recorded text around the first match.
	Snippet string `json:"snippet"`
}

// SearchResult is a search's answer: the first maxHits hits and how many
// parts matched in all.
type SearchResult struct {
	Query string `json:"query"`
	Hits  []Hit  `json:"hits"`
	Total int    `json:"total"`
}

const (
	maxHits     = 200
	snippetSide = 60
	// maxQuery bounds the query a page may send.
	maxQuery = 200
)

// Filter narrows a search or, with no query, lists the parts that pass
// it: only committed parts, only parts with run_tests calls, one session,
// one kind (text, reasoning, tool, patch…), one tool, one tool kind
// (shell, edit, …: agent.Action.ToolKind, the same for every harness),
// only failed tool calls.
type Filter struct {
	Committed, RunTests, Error    bool
	Session, Kind, Tool, ToolKind string
}

// any says whether f narrows anything.
func (f Filter) any() bool {
	return f.Committed || f.RunTests || f.Error || f.Session != "" || f.Kind != "" || f.Tool != "" || f.ToolKind != ""
}

// search finds the parts whose recorded JSON (text, tool input and output,
// everything the harness sent) holds q, case-insensitively, and that pass
// filter, reading each part once through the byte-offset index: no copy
// of the trace is kept in memory. With no q, every part passing the
// filter is a hit (titled by its timeline title). Kind, tool and error
// are read from the part's row (the harness's reader), the others from
// the index.
func (s *snapshot) search(q string, filter Filter) (SearchResult, error) {
	res := SearchResult{Query: q, Hits: []Hit{}}
	// The recorded form of q inside a JSON string (quotes, newlines
	// escaped), lowered.
	enc, _ := json.Marshal(q)
	needle := bytes.ToLower(enc[1 : len(enc)-1])
	if len(needle) == 0 && !filter.any() {
		return res, nil
	}
	committed, runTests, session := filter.Committed, filter.RunTests, filter.Session
	byRow := filter.Kind != "" || filter.Tool != "" || filter.ToolKind != "" || filter.Error
	withCalls := map[int]bool{}
	if runTests {
		for _, c := range s.ix.Calls {
			withCalls[c.Part] = true
		}
	}
	sess := int32(-1)
	if session != "" {
		for i, se := range s.ix.Sessions {
			if se.ID == session {
				sess = int32(i)
			}
		}
		if sess < 0 {
			return res, nil
		}
	}
	f, err := os.Open(s.path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	var buf, low []byte
	for i, loc := range s.ix.Parts {
		if committed && !loc.Committed || runTests && !withCalls[int(loc.Part)] || sess >= 0 && loc.Session != sess {
			continue
		}
		if cap(buf) < int(loc.Len) {
			buf = make([]byte, loc.Len)
		}
		buf = buf[:loc.Len]
		if _, err := f.ReadAt(buf, loc.Off); err != nil {
			return res, err
		}
		at := -1
		if len(needle) > 0 {
			low = append(low[:0], buf...)
			lowerASCII(low)
			if at = bytes.Index(low, needle); at < 0 {
				continue
			}
		}
		title := ""
		if byRow {
			r := row(s.ix, i, buf)
			if filter.Kind != "" && r.Kind != filter.Kind || filter.Tool != "" && r.Tool != filter.Tool ||
				filter.ToolKind != "" && r.ToolKind != filter.ToolKind || filter.Error && !r.Error {
				continue
			}
			title = hitTitle(r)
		}
		res.Total++
		if len(res.Hits) >= maxHits {
			continue
		}
		h := Hit{Part: int(loc.Part)}
		switch {
		case at >= 0:
			h.Snippet = snippet(buf, at, len(needle))
		case title != "":
			h.Snippet = title
		default:
			h.Snippet = hitTitle(row(s.ix, i, buf))
		}
		res.Hits = append(res.Hits, h)
	}
	return res, nil
}

// hitTitle names a part found by its filter alone: kind, tool, title.
func hitTitle(r Row) string {
	k := r.Kind
	if r.Tool != "" {
		k = r.Tool
	}
	return k + ": " + r.Title
}

// lowerASCII lowers b in place (ASCII only, so offsets stay those of the
// original bytes).
func lowerASCII(b []byte) {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
}

// snippet is the text around raw[at:at+n], JSON escapes made readable.
func snippet(raw []byte, at, n int) string {
	lo, hi := max(0, at-snippetSide), min(len(raw), at+n+snippetSide)
	s := strings.ToValidUTF8(string(raw[lo:hi]), "")
	s = strings.NewReplacer(`\n`, " ", `\t`, " ", `\"`, `"`, `\\`, `\`).Replace(s)
	return strings.TrimSpace(s)
}

func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	q := r.URL.Query()
	text := q.Get("q")
	if len(text) > maxQuery {
		httpError(w, errors.Join(errBadRequest, errors.New("q: at most "+strconv.Itoa(maxQuery)+" bytes")))
		return
	}
	res, err := snap.search(text, Filter{Committed: q.Get("committed") == "1", RunTests: q.Get("run_tests") == "1", Error: q.Get("error") == "1",
		Session: q.Get("session"), Kind: q.Get("kind"), Tool: q.Get("tool"), ToolKind: q.Get("tool_kind")})
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, res)
}

// apiNav answers "which part is next": the nearest committed part
// (what=checkpoint) before or after part n (dir=prev|next); 0 when none.
func (s *Server) apiNav(w http.ResponseWriter, r *http.Request) {
	_, snap, err := s.snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		httpError(w, errors.Join(errBadRequest, errors.New("part: not a number")))
		return
	}
	next := r.URL.Query().Get("dir") != "prev"
	found := 0
	parts := snap.ix.Parts
	if next {
		for _, p := range parts {
			if int(p.Part) > n && p.Committed {
				found = int(p.Part)
				break
			}
		}
	} else {
		for i := len(parts) - 1; i >= 0; i-- {
			if int(parts[i].Part) < n && parts[i].Committed {
				found = int(parts[i].Part)
				break
			}
		}
	}
	writeJSON(w, map[string]int{"part": found})
}
