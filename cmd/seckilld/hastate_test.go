package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seckill/seckill/replica"
)

// /admin/replica shows a standby's last acknowledgement in the format of
// every answer's times, and no time at all before its first one (not the
// zero time.Time, year 1).
func TestStandbyReportLastAck(t *testing.T) {
	acked := follower{Follower: replica.Follower{Name: "b", Connected: true, CaughtUp: true,
		LastAck: time.Date(2026, 12, 6, 5, 42, 47, 662010701, time.FixedZone("CET", 3600))}}
	got, err := json.Marshal(newStandbyReport(acked))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"b","connected":true,"caught_up":true,"lag_records":0,"lag_ms":0,"last_ack":"2026-12-06T04:42:47.662Z"}`; string(got) != want {
		t.Errorf("acknowledged: %s, want %s", got, want)
	}
	got, err = json.Marshal(newStandbyReport(follower{Follower: replica.Follower{Name: "b", Connected: true}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"b","connected":true,"caught_up":false,"lag_records":0,"lag_ms":0}`; string(got) != want {
		t.Errorf("never acknowledged: %s, want %s", got, want)
	}
}
