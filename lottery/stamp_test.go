package lottery

import "testing"

func TestStamp(t *testing.T) {
	for ms, want := range map[int64]string{
		0:             "1970-01-01T00:00:00.000Z",
		1728926013000: "2024-10-14T17:13:33.000Z",
		1796152172005: "2026-12-01T19:09:32.005Z",
	} {
		if got := Stamp(ms); got != want {
			t.Errorf("Stamp(%d) = %q, want %q", ms, got, want)
		}
	}
}
