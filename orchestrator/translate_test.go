package orchestrator

import (
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox/opencode"
)

func TestTranslateOpenCodeEvents(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		kind    EventKind
		session string
		busy    bool
		detail  string
		skip    bool
	}{
		{"part", `{"type":"message.part.updated","properties":{"sessionID":"s1","part":{"id":"p1","sessionID":"s1","messageID":"m1","type":"text","time":{"start":1,"end":2}}}}`,
			EventPart, "s1", false, "", false},
		{"message", `{"type":"message.updated","properties":{"sessionID":"s1","info":{"id":"m1","sessionID":"s1","role":"assistant","time":{"created":1}}}}`,
			EventMessage, "s1", false, "", false},
		{"sub-agent session", `{"type":"session.created","properties":{"sessionID":"s2","info":{"id":"s2","parentID":"s1","time":{"created":1,"updated":1}}}}`,
			EventSession, "s2", false, "", false},
		{"busy", `{"type":"session.status","properties":{"sessionID":"s1","status":{"type":"busy"}}}`, EventStatus, "s1", true, "", false},
		{"retry is busy", `{"type":"session.status","properties":{"sessionID":"s1","status":{"type":"retry","attempt":2}}}`, EventStatus, "s1", true, "", false},
		{"idle", `{"type":"session.status","properties":{"sessionID":"s1","status":{"type":"idle"}}}`, EventStatus, "s1", false, "", false},
		{"session.idle", `{"type":"session.idle","properties":{"sessionID":"s1"}}`, EventStatus, "s1", false, "", false},
		{"error", `{"type":"session.error","properties":{"sessionID":"s1","error":{"name":"ProviderAuthError","data":{"message":"bad key"}}}}`,
			EventError, "s1", false, "agent server error: ProviderAuthError: bad key", false},
		{"our abort", `{"type":"session.error","properties":{"sessionID":"s1","error":{"name":"MessageAbortedError","data":{"message":"aborted"}}}}`,
			0, "", false, "", true},
		{"delta", `{"type":"message.part.delta","properties":{"sessionID":"s1","messageID":"m1","partID":"p1","field":"text","delta":"x"}}`,
			0, "", false, "", true},
		{"heartbeat", `{"type":"server.heartbeat","properties":{}}`, 0, "", false, "", true},
		{"reconnected", `{"type":"traj.stream.reconnected","properties":{}}`, EventResync, "", false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oe, err := opencode.ParseEvent([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			ev, ok := translate(oe)
			if ok == tt.skip {
				t.Fatalf("translated = %v, want %v", ok, !tt.skip)
			}
			if tt.skip {
				return
			}
			if ev.Kind != tt.kind || ev.SessionID != tt.session || ev.Busy != tt.busy || ev.Detail != tt.detail {
				t.Errorf("got %+v", ev)
			}
			if (tt.kind == EventPart || tt.kind == EventMessage || tt.kind == EventSession) && !strings.Contains(tt.data, string(ev.Data)) {
				t.Errorf("data %s is not the server's object verbatim", ev.Data)
			}
		})
	}
}
