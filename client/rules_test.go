package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/client"
	"github.com/valyala/fasthttp"
)

// The buyer's rules against scripted servers: each answers from a script
// and records what it was sent, so a test sees every attempt.

// recorded is one request a scripted server received.
type recorded struct {
	method, path, body string
	at                 time.Time
}

// script serves answers in turn (the last one repeats) and records requests.
type script struct {
	mu       sync.Mutex
	seen     []recorded
	answer   func(n int, r *http.Request) (status int, header map[string]string, body string)
	newConns atomic.Int64
}

func serve(t *testing.T, s *script) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.seen)
		s.seen = append(s.seen, recorded{r.Method, r.URL.RequestURI(), string(b), time.Now()})
		s.mu.Unlock()
		status, header, body := s.answer(n, r)
		if status == 0 { // drop the connection: no answer at all
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.newConns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

func (s *script) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.seen...)
}

// forEachTransport runs test over net/http (Options.HTTPClient's default)
// and over fasthttp (Options.FastHTTP): the rules hold over both.
func forEachTransport(t *testing.T, test func(t *testing.T)) {
	t.Run("net/http", test)
	t.Run("fasthttp", test)
}

// newClient makes the client of o, over the transport the test's name
// ends with (forEachTransport).
func newClient(t *testing.T, o client.Options) *client.Client {
	t.Helper()
	if strings.HasSuffix(t.Name(), "/fasthttp") {
		o.FastHTTP = &fasthttp.Client{}
	}
	c, err := client.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const accepted = `{"reservation_id":"c~s~1~00","request_id":"r1","state":"PENDING_PAYMENT","token_id":1,"expire_at":"2030-01-01T00:15:00.000Z","status_url":"/v1/reservations/c~s~1~00"}`

var click = client.ReserveRequest{CampaignID: "c", SKUID: "s", UserID: "u1", RequestID: "r1"}

// 429 and 503 are sent again, with the same body, no sooner than their
// Retry-After.
func TestRetryAfterHonouredWithTheSameRequestID(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(n int, _ *http.Request) (int, map[string]string, string) {
			switch n {
			case 0:
				return 429, map[string]string{"Retry-After": "0.3"}, `{"error":"QUEUE_FULL"}`
			case 1:
				return 503, map[string]string{"Retry-After": "0.2"}, `{"error":"UNAVAILABLE"}`
			}
			return 202, nil, accepted
		}}
		ts := serve(t, s)
		r, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(context.Background(), click)
		if err != nil || r.ReservationID != "c~s~1~00" {
			t.Fatalf("reserve: %v %v", r, err)
		}
		seen := s.requests()
		if len(seen) != 3 {
			t.Fatalf("%d attempts, want 3", len(seen))
		}
		for i := 1; i < 3; i++ {
			if seen[i].body != seen[0].body || !strings.Contains(seen[0].body, `"request_id":"r1"`) {
				t.Fatalf("attempt %d sent %s, the first %s", i, seen[i].body, seen[0].body)
			}
		}
		if gap := seen[1].at.Sub(seen[0].at); gap < 300*time.Millisecond {
			t.Fatalf("sent again %v after a Retry-After of 0.3 s", gap)
		}
		if gap := seen[2].at.Sub(seen[1].at); gap < 200*time.Millisecond {
			t.Fatalf("sent again %v after a Retry-After of 0.2 s", gap)
		}
	})
}

// A reserve without a request_id gets one drawn, kept for its retries.
func TestDrawnRequestIDKeptForRetries(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(n int, _ *http.Request) (int, map[string]string, string) {
			if n == 0 {
				return 0, nil, "" // the connection drops: no answer
			}
			return 202, nil, accepted
		}}
		ts := serve(t, s)
		_, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(context.Background(), client.ReserveRequest{CampaignID: "c", SKUID: "s", UserID: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		seen := s.requests()
		if len(seen) != 2 || seen[0].body != seen[1].body || !strings.Contains(seen[0].body, `"request_id":"`) {
			t.Fatalf("attempts %+v: want two with one drawn request_id", seen)
		}
	})
}

// A 504 RESULT_UNKNOWN is resolved by the lookup: the reservation it made
// is returned without sending the reserve again.
func TestResultUnknownResolvedByLookup(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(n int, r *http.Request) (int, map[string]string, string) {
			if r.Method == http.MethodPost {
				return 504, nil, `{"error":"RESULT_UNKNOWN","status_url":"/v1/campaigns/c/skus/s/requests/r1"}`
			}
			return 200, nil, `{"request_id":"r1","outcome":"ACCEPTED","reservation_id":"c~s~1~00","reservation":{"reservation_id":"c~s~1~00","request_id":"r1","user_id":"u1","state":"PENDING_PAYMENT","token_id":1,"created_at":"2030-01-01T00:00:00.000Z","expire_at":"2030-01-01T00:15:00.000Z"}}`
		}}
		ts := serve(t, s)
		r, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(context.Background(), click)
		if err != nil || r.ReservationID != "c~s~1~00" || r.StatusURL != "/v1/reservations/c~s~1~00" {
			t.Fatalf("reserve: %+v %v", r, err)
		}
		seen := s.requests()
		if len(seen) != 2 || seen[1].path != "/v1/campaigns/c/skus/s/requests/r1" {
			t.Fatalf("requests %+v: want the reserve and one lookup", seen)
		}
	})
}

// A 504 whose request the SKU never decided (lookup 404) is sent again with
// the same request_id; one decided as SOLD_OUT is that refusal; one that
// made another user's reservation is REQUEST_ID_REUSED.
func TestResultUnknownOutcomes(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		for _, tc := range []struct {
			name, lookup string
			lookupStatus int
			want         error
		}{
			{"undecided", `{"error":"NOT_FOUND"}`, 404, nil},
			{"sold out", `{"request_id":"r1","outcome":"SOLD_OUT"}`, 200, client.ErrSoldOut},
			{"another user", `{"request_id":"r1","outcome":"ACCEPTED","reservation_id":"c~s~1~00","reservation":{"reservation_id":"c~s~1~00","user_id":"u2","state":"PAID"}}`, 200, client.ErrRequestIDReused},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var posts atomic.Int64
				s := &script{answer: func(n int, r *http.Request) (int, map[string]string, string) {
					if r.Method == http.MethodGet {
						return tc.lookupStatus, nil, tc.lookup
					}
					if posts.Add(1) == 1 {
						return 504, nil, `{"error":"RESULT_UNKNOWN","status_url":"/v1/campaigns/c/skus/s/requests/r1"}`
					}
					return 202, nil, accepted
				}}
				ts := serve(t, s)
				_, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(context.Background(), click)
				if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				if want := map[bool]int64{true: 2, false: 1}[tc.want == nil]; posts.Load() != want {
					t.Fatalf("%d reserves sent, want %d", posts.Load(), want)
				}
			})
		}
	})
}

// A payment whose answer is a 504 is resolved by reading the reservation:
// paid by this payment, the call ends without paying again.
func TestPaymentResultUnknownResolvedByStatus(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		var pays atomic.Int64
		s := &script{answer: func(n int, r *http.Request) (int, map[string]string, string) {
			if r.Method == http.MethodPost {
				pays.Add(1)
				return 504, nil, `{"error":"RESULT_UNKNOWN","status_url":"/v1/reservations/c~s~1~00"}`
			}
			return 200, nil, `{"reservation_id":"c~s~1~00","state":"PAID","payment_id":"p1"}`
		}}
		ts := serve(t, s)
		r, err := newClient(t, client.Options{BaseURL: ts.URL, PaymentSecret: "k"}).Pay(context.Background(), "c~s~1~00", client.Payment{PaymentID: "p1", Amount: 5})
		if err != nil || r.State != client.StatePaid || pays.Load() != 1 {
			t.Fatalf("pay: %+v %v after %d payments", r, err, pays.Load())
		}
		if body := s.requests()[0].body; !strings.Contains(body, `"reservation_id":"c~s~1~00"`) {
			t.Fatalf("payment body %s does not name its reservation", body)
		}
	})
}

// A 421 WRONG_CELL is sent again to the cell it names; a reservation id
// that names a cell goes there directly; a 421 with a Location follows it.
func TestMisdirectedFollowed(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		cell2 := &script{answer: func(int, *http.Request) (int, map[string]string, string) { return 202, nil, accepted }}
		ts2 := serve(t, cell2)
		cell1 := &script{answer: func(int, *http.Request) (int, map[string]string, string) {
			return 421, nil, `{"error":"WRONG_CELL","detail":"the user belongs to another cell: user u1 of c/s is cell c2's"}`
		}}
		ts1 := serve(t, cell1)
		c := newClient(t, client.Options{BaseURL: ts1.URL, Cells: map[string]string{"c2": ts2.URL}})
		if _, err := c.Reserve(context.Background(), click); err != nil {
			t.Fatal(err)
		}
		if len(cell2.requests()) != 1 || cell2.requests()[0].body != cell1.requests()[0].body {
			t.Fatalf("cell c2 got %+v", cell2.requests())
		}
		// Without the cell's address the 421 is the answer, naming the cell.
		_, err := newClient(t, client.Options{BaseURL: ts1.URL}).Reserve(context.Background(), click)
		if !errors.Is(err, client.ErrWrongCell) || client.WrongCell(err) != "c2" {
			t.Fatalf("without Cells: %v", err)
		}
		// A celled reservation id goes to its cell.
		if _, err := c.Reservation(context.Background(), "c~s~c2~7~ab"); err != nil || len(cell2.requests()) != 2 {
			t.Fatalf("status of a c2 reservation: cell c2 saw %+v", cell2.requests())
		}
		// A 421 with a Location (a replica set's NOT_PRIMARY).
		primary := serve(t, &script{answer: func(int, *http.Request) (int, map[string]string, string) { return 202, nil, accepted }})
		standby := serve(t, &script{answer: func(int, *http.Request) (int, map[string]string, string) {
			return 421, map[string]string{"Location": primary.URL + "/v1/campaigns/c/skus/s/reservations"}, `{"error":"NOT_PRIMARY"}`
		}})
		if _, err := newClient(t, client.Options{BaseURL: standby.URL}).Reserve(context.Background(), click); err != nil {
			t.Fatalf("NOT_PRIMARY with a Location: %v", err)
		}
	})
}

// A Retry-After beyond the context's deadline is not waited for: the call
// returns the server's answer at once.
func TestDeadlineNotOverslept(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(int, *http.Request) (int, map[string]string, string) {
			return 429, map[string]string{"Retry-After": "60"}, `{"error":"QUEUE_FULL"}`
		}}
		ts := serve(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(ctx, click)
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "QUEUE_FULL" || e.RetryAfter != time.Minute {
			t.Fatalf("got %v, want the 429 QUEUE_FULL with its Retry-After", err)
		}
		if ctx.Err() != nil || time.Since(start) > 4*time.Second {
			t.Fatalf("waited %v for a Retry-After past the deadline", time.Since(start))
		}
		if len(s.requests()) != 1 {
			t.Fatalf("%d attempts", len(s.requests()))
		}
	})
}

// Calls one after another share one kept-alive connection.
func TestKeepAlive(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(int, *http.Request) (int, map[string]string, string) { return 202, nil, accepted }}
		ts := serve(t, s)
		c := newClient(t, client.Options{BaseURL: ts.URL})
		for i := 0; i < 50; i++ {
			if _, err := c.Reserve(context.Background(), click); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.newConns.Load(); n != 1 {
			t.Fatalf("50 calls opened %d connections", n)
		}
	})
}

// An answer that is no retry's business (a 4xx) is returned at once.
func TestRefusalNotRetried(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(int, *http.Request) (int, map[string]string, string) {
			return 409, nil, `{"error":"ALREADY_PURCHASED","reservation_id":"c~s~9~00","sku_id":"s"}`
		}}
		ts := serve(t, s)
		_, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(context.Background(), click)
		var e *client.Error
		if !errors.As(err, &e) || !errors.Is(err, client.ErrAlreadyPurchased) || e.ReservationID != "c~s~9~00" || len(s.requests()) != 1 {
			t.Fatalf("got %v after %d attempts", err, len(s.requests()))
		}
	})
}

// The server's times are read, and an empty one ("" in an export written
// by seckillctl) is the zero time.
func TestReservationTimes(t *testing.T) {
	var r client.Reservation
	if err := json.Unmarshal([]byte(`{"reservation_id":"c~s~1~00","created_at":"2030-01-01T00:00:00.123Z","paid_at":"","expire_at":"2030-01-01T00:15:00.000Z"}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.CreatedAt.UnixMilli() != time.Date(2030, 1, 1, 0, 0, 0, 123e6, time.UTC).UnixMilli() || !r.PaidAt.IsZero() || r.ExpireAt.Minute() != 15 {
		t.Fatalf("%+v", r)
	}
}

// An attempt the server does not answer ends at the context's deadline,
// over either transport, with the deadline's error.
func TestAttemptEndsAtTheDeadline(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		release := make(chan struct{})
		s := &script{answer: func(int, *http.Request) (int, map[string]string, string) {
			<-release
			return 202, nil, accepted
		}}
		ts := serve(t, s)
		t.Cleanup(func() { close(release) }) // before ts.Close, which waits for the handler
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(ctx, click); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the deadline's error", err)
		}
	})
}

// A reservation is read as encoding/json would read it into its fields:
// null is zero, a token_id is a number within uint32, a wrong type is an
// error.
func TestReservationDecoding(t *testing.T) {
	var r client.Reservation
	if err := json.Unmarshal([]byte(`{"reservation_id":null,"state":"PAID","token_id":7,"refund_required":true,"other":[1,{}]}`), &r); err != nil ||
		r.ReservationID != "" || r.State != client.StatePaid || r.TokenID != 7 || !r.RefundRequired {
		t.Fatalf("%+v, %v", r, err)
	}
	for _, bad := range []string{`{"token_id":4294967296}`, `{"token_id":"7"}`, `{"state":1}`, `{"expire_at":"tomorrow"}`, `[]`, `{`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// seckill's own time layout is read as time.Parse reads it, and a date
// that does not exist is an error.
func TestReservationTimeLayouts(t *testing.T) {
	for _, v := range []string{"2030-01-01T00:15:00.000Z", "2028-02-29T23:59:59.999Z", "2030-01-01T00:15:00Z", "2030-01-01T01:15:00.5+01:00"} {
		var r client.Reservation
		want, _ := time.Parse(time.RFC3339Nano, v)
		if err := json.Unmarshal([]byte(`{"expire_at":"`+v+`"}`), &r); err != nil || !r.ExpireAt.Equal(want) {
			t.Errorf("%s: %v (%v), want %v", v, r.ExpireAt, err, want)
		}
	}
	for _, v := range []string{"2030-02-30T00:15:00.000Z", "2030-13-01T00:15:00.000Z", "2030-01-01T24:15:00.000Z", "2030-01-01T00:15:0x.000Z"} {
		var r client.Reservation
		if err := json.Unmarshal([]byte(`{"expire_at":"`+v+`"}`), &r); err == nil {
			t.Errorf("%s: read as %v, want an error", v, r.ExpireAt)
		}
	}
}

// A context cancelled while the call waits out a Retry-After ends the call
// at once with the context's error, the server's answer still readable.
// The wait is the same code over either transport; net/http lets the test
// see the client close the answer's body, after which it only waits.
func TestCancelDuringRetryAfter(t *testing.T) {
	s := &script{answer: func(int, *http.Request) (int, map[string]string, string) {
		return 503, map[string]string{"Retry-After": "60"}, `{"error":"UNAVAILABLE"}`
	}}
	ts := serve(t, s)
	read := make(chan struct{}, 1)
	hc := &http.Client{Transport: closeSignal{http.DefaultTransport, read}}
	c, err := client.New(client.Options{BaseURL: ts.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Reserve(ctx, click)
		done <- err
	}()
	<-read
	cancel()
	err = <-done
	var e *client.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Code != "UNAVAILABLE" {
		t.Fatalf("got %v, want context.Canceled carrying the 503 UNAVAILABLE", err)
	}
	if len(s.requests()) != 1 {
		t.Fatalf("%d attempts", len(s.requests()))
	}
}

// closeSignal is a transport whose answers' bodies signal closed when
// the client closes them.
type closeSignal struct {
	http.RoundTripper
	closed chan<- struct{}
}

func (c closeSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.RoundTripper.RoundTrip(r)
	if err == nil {
		resp.Body = signalBody{resp.Body, c.closed}
	}
	return resp, err
}

type signalBody struct {
	io.ReadCloser
	closed chan<- struct{}
}

func (b signalBody) Close() error {
	err := b.ReadCloser.Close()
	select {
	case b.closed <- struct{}{}:
	default:
	}
	return err
}
