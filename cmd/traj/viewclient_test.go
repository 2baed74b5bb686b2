package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"

	"github.com/trajlab/traj/replay/view"
)

// viewClient serves the store st through a real viewer (token token,
// no polling) and returns a GET of its API, logged in: the body when v is
// nil, else decoded into v. A status other than 200 fails the test.
func viewClient(t *testing.T, st, token string) func(path string, v any) []byte {
	t.Helper()
	srv, err := view.New(t.Context(), view.Options{StoreURL: st, CacheDir: t.TempDir(), Token: token, Poll: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	get := func(path string, v any) []byte {
		t.Helper()
		resp, err := cl.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s %.300s", path, resp.Status, b)
		}
		if v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return b
	}
	get("/?token="+token, nil)
	return get
}
