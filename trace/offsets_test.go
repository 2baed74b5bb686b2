package trace_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
)

// TestScanOffsetsMalformed: the byte walk refuses what is not a trace's
// shape (turns and parts that are neither arrays nor null), and End
// reports where the top-level object closed, so a caller can refuse
// data after it.
func TestScanOffsetsMalformed(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		parts     int
		end       int64 // -1: the scan fails
	}{
		{"plain", `{"a":1,"turns":[{"parts":[{"part":1}]}]}`, 1, 40},
		{"null turns and parts", `{"turns":null,"x":{"parts":5}}`, 0, 30},
		{"null parts", `{"turns":[{"parts":null}]} `, 0, 26},
		{"data after the object", `{"turns":[]}{}`, 0, 12},
		{"turns a number", `{"turns":5}`, 0, -1},
		{"turns an object", `{"turns":{"parts":[]}}`, 0, -1},
		{"parts a string", `{"turns":[{"parts":"x"}]}`, 0, -1},
		{"missing comma", `{"a":1 "turns":[]}`, 0, -1},
		{"truncated", `{"turns":[{"parts":[{"part":1}`, 0, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := strings.NewReader(tt.doc)
			parts, end := 0, int64(-2)
			err := trace.ScanOffsets(r, int64(len(tt.doc)), trace.ScanFrom{}, trace.OffsetVisitor{
				Part: func(int, int64, []byte) error { parts++; return nil },
				End:  func(off int64) error { end = off; return nil },
			})
			if tt.end < 0 {
				if err == nil {
					t.Fatalf("scan of %s succeeded", tt.doc)
				}
				return
			}
			if err != nil || parts != tt.parts || end != tt.end {
				t.Fatalf("scan of %s: %d parts, end %d, %v; want %d parts, end %d", tt.doc, parts, end, err, tt.parts, tt.end)
			}
		})
	}
}

// TestObjectFieldsCommas: the fields of an object are separated by one
// comma each, none before the first, none after the last.
func TestObjectFieldsCommas(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		keys string // "" with ok false: refused
		ok   bool
	}{
		{`{}`, "", true},
		{` { "a" : 1 , "b":[1,{"c":"}"}] }`, "a,b", true},
		{`{"a":1 "b":2}`, "", false},
		{`{,"a":1}`, "", false},
		{`{"a":1,}`, "", false},
		{`{"a":1,,"b":2}`, "", false},
		{`{"a" 1}`, "", false},
		{`{"a":1`, "", false},
	} {
		var keys [][]byte
		err := trace.ObjectFields([]byte(tt.doc), func(k, _ []byte) error { keys = append(keys, k); return nil })
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok %v", tt.doc, err, tt.ok)
			continue
		}
		if tt.ok && string(bytes.Join(keys, []byte(","))) != tt.keys {
			t.Errorf("%s: keys %q, want %s", tt.doc, keys, tt.keys)
		}
	}
}

// TestArrayValues: the values of an array, each once, commas checked.
func TestArrayValues(t *testing.T) {
	for _, tt := range []struct {
		doc, vals string
		ok        bool
	}{
		{`[]`, "", true},
		{` [ 1 , "a]" ,{"b":[2]}, null ] `, `1|"a]"|{"b":[2]}|null`, true},
		{`[1 2]`, "", false},
		{`[,1]`, "", false},
		{`[1,]`, "", false},
		{`[1`, "", false},
		{`{}`, "", false},
	} {
		var vals [][]byte
		err := trace.ArrayValues([]byte(tt.doc), func(v []byte) error { vals = append(vals, v); return nil })
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok %v", tt.doc, err, tt.ok)
			continue
		}
		if tt.ok && string(bytes.Join(vals, []byte("|"))) != tt.vals {
			t.Errorf("%s: values %q, want %s", tt.doc, vals, tt.vals)
		}
	}
}
