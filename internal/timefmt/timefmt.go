// Package timefmt is seckill's one format of times, in every answer, event,
// export and tool output: RFC 3339 in UTC with milliseconds
// ("2026-12-01T19:30:00.000Z"). Times are kept as Unix milliseconds.
package timefmt

import (
	"strings"
	"sync/atomic"
	"time"
)

// Layout is the time.Format layout of the format (times are rendered in
// UTC, so the zone is always "Z"). Clients parse it as RFC 3339.
const Layout = "2006-01-02T15:04:05.000Z07:00"

// Millis renders Unix milliseconds in the format.
func Millis(ms int64) string {
	var buf [len(Layout)]byte
	return string(AppendMillis(buf[:0], ms))
}

// OptionalMillis is Millis, or "" for 0 (a time not set).
func OptionalMillis(ms int64) string {
	if ms == 0 {
		return ""
	}
	return Millis(ms)
}

// AppendMillis appends ms (Unix milliseconds) in the format, without
// time.Format's layout parsing, which cost a hot reserve's 202 body about
// 2,000 instructions (5% of the request; callgrind,
// BenchmarkPathHotReserve; and ~1 µs of each feed event's encoding). The
// date part comes from renderedDay, the last day rendered (a crowd's
// expire_at values share their day): only the time of day is computed per
// call. Times before 1970 and years after 9999 take time.Format.
func AppendMillis(dst []byte, ms int64) []byte {
	if ms < 0 || ms >= firstMillisOfYear10000 {
		return time.UnixMilli(ms).UTC().AppendFormat(dst, Layout)
	}
	day, rest := ms/millisPerDay, int(ms%millisPerDay)
	d := lastRenderedDay.Load()
	if d == nil || d.day != day {
		d = renderDay(day)
		lastRenderedDay.Store(d)
	}
	dst = append(dst, d.text[:]...)
	dst = appendDigits(dst, rest/3_600_000, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, rest/60_000%60, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, rest/1000%60, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, rest%1000, 3)
	return append(dst, 'Z')
}

// Seconds renders times as AppendMillis does, keeping the text of the
// latest second it rendered: a call in that second appends one copy and
// three digits instead of computing the time of day. It is for a caller
// whose times mostly share their second and move forward (the 202 body's
// expire_at: a crowd's decisions are a second's), with a Seconds of its
// own: in a cache shared with other callers one far-off time (a sale's
// end_at) would hold the place, and two callers' seconds taking turns
// would make a new entry each call. Only a later second replaces the one
// kept; an earlier one is rendered in place. The zero value is ready;
// safe for concurrent use.
type Seconds struct {
	latest atomic.Pointer[renderedSecond]
}

// renderedSecond is the text of one second, "2006-01-02T15:04:05.": sec is
// its number since 1970-01-01.
type renderedSecond struct {
	sec  int64
	text [20]byte
}

// AppendMillis is the package's AppendMillis, through c.
func (c *Seconds) AppendMillis(dst []byte, ms int64) []byte {
	if ms < 0 || ms >= firstMillisOfYear10000 {
		return AppendMillis(dst, ms)
	}
	sec := ms / 1000
	s := c.latest.Load()
	if s == nil || s.sec < sec {
		var buf [24]byte // "2006-01-02T15:04:05.000Z": the first 20 bytes are the second's
		s = &renderedSecond{sec: sec}
		copy(s.text[:], AppendMillis(buf[:0], sec*1000))
		c.latest.Store(s)
	} else if s.sec != sec {
		return AppendMillis(dst, ms)
	}
	dst = append(dst, s.text[:]...)
	dst = appendDigits(dst, int(ms%1000), 3)
	return append(dst, 'Z')
}

const (
	millisPerDay = 86_400_000
	// firstMillisOfYear10000 is 10000-01-01T00:00:00Z in Unix ms.
	firstMillisOfYear10000 = 253_402_300_800_000
)

// renderedDay is the date part of one day, "2006-01-02T": day is its
// number since 1970-01-01.
type renderedDay struct {
	day  int64
	text [11]byte
}

// lastRenderedDay is the day AppendMillis rendered last. Goroutines
// rendering different days replace it in turn; each value is whole.
var lastRenderedDay atomic.Pointer[renderedDay]

// renderDay renders the date part of day (0 <= day, year at most 9999).
func renderDay(day int64) *renderedDay {
	year, month, date := time.UnixMilli(day * millisPerDay).UTC().Date()
	d := &renderedDay{day: day}
	b := appendDigits(d.text[:0], year, 4) // writes into d.text
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	appendDigits(b, date, 2)
	d.text[10] = 'T'
	return d
}

// appendDigits appends v (0 <= v < 10^width) in width decimal digits.
func appendDigits(dst []byte, v, width int) []byte {
	var buf [4]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:width]...)
}

// Duration renders a duration of whole milliseconds in its one canonical
// text, which time.ParseDuration reads back: time.Duration's String
// without its zero units ("15m", not "15m0s"; "1h", "1h30m", "1m30s",
// "1.5s", "250ms"). Every spelling a body may give ("90m", "1.5h",
// "5400s") is answered in this one: a definition keeps milliseconds, not
// the text.
func Duration(ms int64) string {
	s := (time.Duration(ms) * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-len("0s")]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-len("0m")]
	}
	return s
}
