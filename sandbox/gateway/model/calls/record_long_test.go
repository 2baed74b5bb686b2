package calls

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestScanRecordLongLine: a line over the limit is streamed with its
// strings cut (valid JSON, escapes whole), its call marked truncated and
// cut; the lines around it read as usual; a torn long last line is
// ignored as any torn line is.
func TestScanRecordLongLine(t *testing.T) {
	line := func(c Call) string {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	huge := strings.Repeat("data: {\"delta\":\"\\u0001é\"}\n", 20_000) // escapes of every kind
	var rec bytes.Buffer
	rec.WriteString(line(Call{Seq: 1, Status: 200, Response: "small"}))
	rec.WriteString(line(Call{Seq: 2, Status: 200, Model: "m", Response: huge, Error: strings.Repeat("x", 100)}))
	rec.WriteString(line(Call{Seq: 3, Status: 200, Response: "after"}))
	torn := line(Call{Seq: 4, Status: 200, Response: huge})
	rec.WriteString(torn[:len(torn)-10])
	var got []Call
	tot, err := scanRecord(&rec, func(c Call) error { got = append(got, c); return nil }, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || tot.Calls != 3 {
		t.Fatalf("%d calls, totals %+v", len(got), tot)
	}
	c := got[1]
	if c.Seq != 2 || c.Model != "m" || !c.ResponseTruncated || c.Cut == 0 || c.Error != strings.Repeat("x", 100) {
		t.Errorf("long line: seq %d model %q truncated %v cut %d error %q", c.Seq, c.Model, c.ResponseTruncated, c.Cut, c.Error)
	}
	if len(c.Response) > MaxCutString+8 || !strings.HasPrefix(huge, strings.TrimRight(c.Response, "\ufffd")[:100]) {
		t.Errorf("long line's response: %d bytes, %q…", len(c.Response), c.Response[:min(60, len(c.Response))])
	}
	if got[0].Cut != 0 || got[0].ResponseTruncated || got[2].Response != "after" {
		t.Errorf("lines around it: %+v %+v", got[0], got[2])
	}
}
