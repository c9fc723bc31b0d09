package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Monitor bounds.
const (
	monitorTick       = 250 * time.Millisecond
	timelineStep      = time.Second
	maxTimelinePoints = 24 * 3600 // one day of seconds; later seconds are not kept
)

// TimelinePoint is one interval of a run: a whole second [t_s-1, t_s)
// after the start, read when its second ends, or the partial interval
// the run ended in.
type TimelinePoint struct {
	// Second is the end of the interval, in seconds since the start.
	Second float64 `json:"t_s"`
	// WidthS is the interval's length as read, in seconds (1 but for the
	// sampler's own delay, less for a partial one).
	WidthS float64 `json:"width_s"`
	// Partial marks the last interval, cut short by the end of the run:
	// its rate is of a fraction of a second (the report leaves it out).
	Partial bool `json:"partial,omitempty"`
	// ThroughputRPS is the answers per second during the interval.
	ThroughputRPS float64 `json:"throughput_rps"`
	// Outcomes counts the answers of the interval by outcome (non-zero only).
	Outcomes map[string]int64 `json:"outcomes"`
}

// MonitorOptions configures a Monitor.
type MonitorOptions struct {
	// Tally is the run being watched.
	Tally *Tally
	// Out receives the progress (usually stderr); nil prints nothing.
	Out io.Writer
	// Terminal redraws one line in place; otherwise a plain line is printed
	// every PlainEvery.
	Terminal bool
	// PlainEvery is the period of plain lines (default 5 s).
	PlainEvery time.Duration
	// Label starts each line (the scenario name).
	Label string
	// Total is the number of planned attempts, for the ETA (0: unknown).
	Total int64
	// Duration is the run's time bound, for the ETA (0: none).
	Duration time.Duration
	// Units, if set, returns the units sold so far (distinct requests
	// accepted), printed apart from the ACCEPTED answers.
	Units func() int64
}

// Monitor samples a tally once a second into a timeline and prints a live
// progress line: answers so far, rate, outcomes, ETA.
type Monitor struct {
	options  MonitorOptions
	start    time.Time
	mu       sync.Mutex
	timeline []TimelinePoint
	done     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

// StartMonitor starts the sampling goroutine; call Stop when the run ends.
func StartMonitor(options MonitorOptions) *Monitor {
	if options.PlainEvery <= 0 {
		options.PlainEvery = 5 * time.Second
	}
	m := &Monitor{options: options, start: time.Now(), done: make(chan struct{}), stopped: make(chan struct{})}
	go m.loop()
	return m
}

func (m *Monitor) loop() {
	defer close(m.stopped)
	ticker := time.NewTicker(monitorTick)
	defer ticker.Stop()
	// Timeline intervals end on whole seconds after the start, read by a
	// timer set for each (not by the print ticker, whose period would
	// make them 1 to 1.25 s long).
	boundary := 1
	sampler := time.NewTimer(timelineStep)
	defer sampler.Stop()
	lastSample, lastPrint := m.start, m.start
	lastCounts := m.options.Tally.Counts()
	printedCounts, printedAt := lastCounts, m.start
	for {
		select {
		case <-m.done:
			now := time.Now()
			if now.Sub(lastSample) > 0 {
				m.sample(now, lastSample, float64(boundary-1)+now.Sub(lastSample).Seconds(), true, &lastCounts)
			}
			if m.options.Terminal && m.options.Out != nil {
				fmt.Fprintln(m.options.Out)
			}
			return
		case now := <-sampler.C:
			m.sample(now, lastSample, float64(boundary), false, &lastCounts)
			lastSample = now
			boundary++
			sampler.Reset(time.Until(m.start.Add(time.Duration(boundary) * timelineStep)))
		case now := <-ticker.C:
			if m.options.Out == nil {
				continue
			}
			if m.options.Terminal || now.Sub(lastPrint) >= m.options.PlainEvery {
				counts := m.options.Tally.Counts()
				line := m.line(now, counts, printedCounts, now.Sub(printedAt))
				if m.options.Terminal {
					fmt.Fprintf(m.options.Out, "\r%s\x1b[K", line)
				} else {
					fmt.Fprintln(m.options.Out, line)
				}
				lastPrint = now
				if now.Sub(printedAt) >= time.Second {
					printedCounts, printedAt = counts, now
				}
			}
		}
	}
}

// sample appends the interval (since, now], labelled second, to the
// timeline.
func (m *Monitor) sample(now, since time.Time, second float64, partial bool, last *[OutcomeCount]int64) {
	counts := m.options.Tally.Counts()
	point := TimelinePoint{Second: round3(second), WidthS: round3(now.Sub(since).Seconds()), Partial: partial, Outcomes: map[string]int64{}}
	var total int64
	for outcome, count := range counts {
		delta := count - last[outcome]
		if delta > 0 {
			point.Outcomes[Outcome(outcome).String()] = delta
			total += delta
		}
	}
	*last = counts
	if seconds := now.Sub(since).Seconds(); seconds > 0 {
		point.ThroughputRPS = float64(total) / seconds
	}
	m.mu.Lock()
	if len(m.timeline) < maxTimelinePoints && (total > 0 || len(m.timeline) > 0) {
		m.timeline = append(m.timeline, point)
	}
	m.mu.Unlock()
}

// line renders the progress line.
func (m *Monitor) line(now time.Time, counts, before [OutcomeCount]int64, window time.Duration) string {
	var sent, recent int64
	for outcome, count := range counts {
		sent += count
		recent += count - before[outcome]
	}
	rate := 0.0
	if window > 0 {
		rate = float64(recent) / window.Seconds()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s sent", m.options.Label, groupDigits(sent))
	if m.options.Total > 0 {
		attempts := m.options.Tally.Attempts()
		fmt.Fprintf(&b, ", %s/%s attempts", groupDigits(attempts), groupDigits(m.options.Total))
	}
	fmt.Fprintf(&b, " | %s/s |", groupDigits(int64(rate)))
	if m.options.Units != nil {
		fmt.Fprintf(&b, " sold %s units |", groupDigits(m.options.Units()))
	}
	fmt.Fprintf(&b, " answers:")
	for outcome, count := range counts {
		if count > 0 {
			fmt.Fprintf(&b, " %s %s", Outcome(outcome), groupDigits(count))
		}
	}
	if eta, ok := m.eta(now, rate); ok {
		fmt.Fprintf(&b, " | ETA %s", eta.Round(time.Second))
	}
	return b.String()
}

// eta estimates the time left from the plan's size or the run's duration.
func (m *Monitor) eta(now time.Time, rate float64) (time.Duration, bool) {
	var estimates []time.Duration
	if m.options.Duration > 0 {
		estimates = append(estimates, max(0, m.start.Add(m.options.Duration).Sub(now)))
	}
	if m.options.Total > 0 && rate > 0 {
		left := m.options.Total - m.options.Tally.Attempts()
		estimates = append(estimates, time.Duration(float64(max(left, 0))/rate*float64(time.Second)))
	}
	if len(estimates) == 0 {
		return 0, false
	}
	return min(estimates[0], estimates[len(estimates)-1]), true
}

// Stop ends the monitor and returns the timeline.
func (m *Monitor) Stop() []TimelinePoint {
	m.stopOnce.Do(func() { close(m.done) })
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]TimelinePoint(nil), m.timeline...)
}

// round3 rounds to thousandths.
func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// groupDigits prints n with thin separators every three digits (1,234,567).
func groupDigits(n int64) string {
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	s := fmt.Sprintf("%d", n)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
