package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	validator "github.com/pb33f/libopenapi-validator"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/apiclient"
)

// The Go client generated from httpapi/openapi.json (internal/apiclient)
// runs a sale against the real engine over loopback: reserves with and
// without an entry pass, a batch, a lottery entry and its draw, payment,
// cancel, status, lookup and a feed page. Every answer must have the
// status the walk-through expects, decode into the generated type of its
// documented schema without an unknown field, and validate against the
// document: a body the server accepts that the document forbids, or an
// answer it does not describe, fails here.
func TestDocsGeneratedClient(t *testing.T) {
	t.Parallel()
	v := openAPIValidator(t)
	clock := newStepClock()
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock = clock.now },
		config: func(c *httpapi.Config) { passConfig(t)(c); c.Clock = clock.now },
	})
	c, err := apiclient.NewClientWithResponses(ts.base)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+testToken)
		return nil
	}
	issuer := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+testIssuerToken)
		return nil
	}
	check := func(what string, resp any, err error, status int) {
		t.Helper()
		checkDocumented(t, v, what, resp, err, status)
	}

	// A campaign of one SKU sold first come, first served; then a lottery.
	plain, _ := json.Marshal(campaign("gc", "15m", map[string]int{"s": 100}))
	r1, err := c.DefineCampaignWithBodyWithResponse(ctx, "gc", "application/json", bytes.NewReader(plain), admin)
	check("define gc", r1, err, http.StatusCreated)
	lot, round := lotteryCampaign(clock.now(), 2, 1)
	body, _ := json.Marshal(lot)
	r2, err := c.DefineCampaignWithBodyWithResponse(ctx, "lc", "application/json", bytes.NewReader(body), admin)
	check("define lc", r2, err, http.StatusCreated)

	// A reserve without a pass, its repeat, and a second purchase.
	res, err := c.ReserveWithResponse(ctx, "gc", "s", apiclient.ReserveRequest{RequestId: ptr("r-1"), UserId: "alice"})
	check("reserve", res, err, http.StatusAccepted)
	id := res.JSON202.ReservationId
	again, err := c.ReserveWithResponse(ctx, "gc", "s", apiclient.ReserveRequest{RequestId: ptr("r-1"), UserId: "alice"})
	check("reserve again", again, err, http.StatusAccepted)
	if again.JSON202.ReservationId != id {
		t.Errorf("the repeat reserved %s, the first %s", again.JSON202.ReservationId, id)
	}
	second, err := c.ReserveWithResponse(ctx, "gc", "s", apiclient.ReserveRequest{RequestId: ptr("r-2"), UserId: "alice"})
	check("second purchase", second, err, http.StatusConflict)
	noID, err := c.ReserveWithResponse(ctx, "gc", "s", apiclient.ReserveRequest{UserId: "alice"})
	check("reserve without request_id or pass", noID, err, http.StatusBadRequest)

	// An entry pass from the issuing route, and a reserve with it (no request_id).
	pass, err := c.IssueEntryPassWithResponse(ctx, "gc", "s", apiclient.IssueEntryPassJSONRequestBody{UserId: "bob", Tier: ptr(1),
		Subjects: &map[string]any{"device": "dev-1"}}, issuer)
	check("issue a pass", pass, err, http.StatusOK)
	withPass, err := c.ReserveWithResponse(ctx, "gc", "s", apiclient.ReserveRequest{UserId: "bob", EntryPass: ptr(pass.JSON200.EntryPass)})
	check("reserve with a pass", withPass, err, http.StatusAccepted)
	if withPass.JSON202.RequestId != pass.JSON200.RequestId {
		t.Errorf("the reserve with a pass has request_id %s, the pass %s", withPass.JSON202.RequestId, pass.JSON200.RequestId)
	}
	wrongUser, err := c.ReserveWithResponse(ctx, "gc", "s", apiclient.ReserveRequest{UserId: "carol", EntryPass: ptr(pass.JSON200.EntryPass)})
	check("someone else's pass", wrongUser, err, http.StatusForbidden)

	// A batch: two reserves and a bad item.
	batch, err := c.ReserveBatchWithResponse(ctx, "gc", "s", apiclient.ReserveBatchJSONRequestBody{Items: []apiclient.ReserveRequest{
		{RequestId: ptr("b-1"), UserId: "dan"}, {RequestId: ptr("b-2"), UserId: "erin"}, {RequestId: ptr("bad id"), UserId: "frank"}}})
	check("batch", batch, err, http.StatusOK)
	if got := len(batch.JSON200.Results); got != 3 {
		t.Fatalf("batch: %d results, want 3", got)
	}
	for i, want := range []int{202, 202, 400} {
		if got := batch.JSON200.Results[i].Status; got != want {
			t.Errorf("batch item %d: %d, want %d", i, got, want)
		}
	}

	// Status, lookup, the reservation, payment, cancel.
	status, err := c.GetSKUStatusWithResponse(ctx, "gc", "s")
	check("status", status, err, http.StatusOK)
	lookup, err := c.LookupRequestWithResponse(ctx, "gc", "s", "r-1")
	check("lookup", lookup, err, http.StatusOK)
	got, err := c.GetReservationWithResponse(ctx, id)
	check("get", got, err, http.StatusOK)
	paid, err := c.PayWithResponse(ctx, id, nil, apiclient.Payment{PaymentId: "pay-1", Amount: ptr(1999), ReservationId: ptr(id)})
	check("pay", paid, err, http.StatusOK)
	notClosable, err := c.CancelWithResponse(ctx, id)
	check("cancel a paid reservation", notClosable, err, http.StatusConflict)
	cancelled, err := c.CancelWithResponse(ctx, withPass.JSON202.ReservationId)
	check("cancel", cancelled, err, http.StatusOK)
	late, err := c.PayWithResponse(ctx, withPass.JSON202.ReservationId, nil, apiclient.Payment{PaymentId: "pay-2"})
	check("pay after cancel", late, err, http.StatusConflict)
	refunds, err := c.ListRefundsWithResponse(ctx, "gc", "s", admin)
	check("refunds", refunds, err, http.StatusOK)
	audit, err := c.AuditSKUWithResponse(ctx, "gc", "s", admin)
	check("audit", audit, err, http.StatusOK)

	// A feed page.
	limit := 10
	feed, err := c.SkuEventsWithResponse(ctx, "gc", "s", &apiclient.SkuEventsParams{Limit: &limit}, admin)
	check("feed page", feed, err, http.StatusOK)
	if len(feed.JSON200.Events) == 0 {
		t.Error("the feed page holds no event")
	}

	// A lottery: two entries, one with a pass, the close, the draw.
	entry, err := c.EnterLotteryWithResponse(ctx, "lc", "ls", apiclient.EntryRequest{RequestId: ptr("e-1"), UserId: "gina"})
	check("enter", entry, err, http.StatusAccepted)
	lotPass, err := c.IssueEntryPassWithResponse(ctx, "lc", "ls", apiclient.IssueEntryPassJSONRequestBody{UserId: "hank"}, issuer)
	check("issue a lottery pass", lotPass, err, http.StatusOK)
	entryPass, err := c.EnterLotteryWithResponse(ctx, "lc", "ls", apiclient.EntryRequest{UserId: "hank", EntryPass: ptr(lotPass.JSON200.EntryPass)})
	check("enter with a pass", entryPass, err, http.StatusAccepted)
	onLottery, err := c.ReserveWithResponse(ctx, "lc", "ls", apiclient.ReserveRequest{RequestId: ptr("x"), UserId: "ivan"})
	check("reserve on a lottery SKU", onLottery, err, http.StatusConflict)
	rnd := sha256.Sum256([]byte("beacon"))
	draw := apiclient.DrawLotteryJSONRequestBody{}
	draw.Beacon.Round, draw.Beacon.Randomness = int(round), ptr(hex.EncodeToString(rnd[:]))
	early, err := c.DrawLotteryWithResponse(ctx, "lc", "ls", draw, admin)
	check("draw while entries are open", early, err, http.StatusConflict)
	clock.step(2 * time.Minute) // past entries_close_at and the round's publication
	drawn, err := c.DrawLotteryWithResponse(ctx, "lc", "ls", draw, admin)
	check("draw", drawn, err, http.StatusAccepted)
	eventually(t, 30*time.Second, "the draw is recorded", func() bool {
		info, err := c.GetLotteryWithResponse(ctx, "lc", "ls")
		return err == nil && info.StatusCode() == http.StatusOK && strings.Contains(string(info.Body), `"phase":"DRAWN"`)
	})
	info, err := c.GetLotteryWithResponse(ctx, "lc", "ls")
	check("lottery evidence", info, err, http.StatusOK)
	entryStatus, err := c.GetLotteryEntryWithResponse(ctx, "lc", "ls", "e-1")
	check("entry status", entryStatus, err, http.StatusOK)
	pool, err := c.GetLotteryEntriesCSVWithResponse(ctx, "lc", "ls", admin)
	check("the pool", pool, err, http.StatusOK)
}

// checkDocumented fails the test unless resp, a generated ...Response, has
// the status want, its generated field for that status (JSON<status>) is
// set, the body decodes into that field's type without an unknown field,
// and the exchange validates against openapi.json.
func checkDocumented(t *testing.T, v validator.Validator, what string, resp any, err error, want int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	rv := reflect.ValueOf(resp).Elem()
	body := rv.FieldByName("Body").Bytes()
	hr := rv.FieldByName("HTTPResponse").Interface().(*http.Response)
	if hr.StatusCode != want {
		t.Fatalf("%s: %d %s, want %d", what, hr.StatusCode, body, want)
	}
	if strings.HasPrefix(hr.Header.Get("Content-Type"), "application/json") {
		field := rv.FieldByName(fmt.Sprintf("JSON%d", want))
		if !field.IsValid() {
			t.Fatalf("%s: openapi.json documents no JSON answer %d (the generated type has no JSON%d)", what, want, want)
		}
		if field.IsNil() {
			t.Fatalf("%s: the generated client did not decode the %d answer %s", what, want, body)
		}
		strict := reflect.New(field.Type().Elem())
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(strict.Interface()); err != nil {
			t.Errorf("%s: the %d answer does not decode into its documented schema (%s): %v\n%s", what, want, field.Type().Elem(), err, body)
		}
	}
	req := hr.Request
	checkReq, _ := http.NewRequest(req.Method, "http://localhost"+req.URL.RequestURI(), nil)
	checkReq.Header = req.Header.Clone()
	checkResp := *hr
	checkResp.Body = io.NopCloser(bytes.NewReader(body))
	if ok, problems := v.ValidateHttpResponse(checkReq, &checkResp); !ok {
		for _, p := range problems {
			t.Errorf("%s: %d %s: %s (%s)", what, hr.StatusCode, body, p.Message, p.Reason)
		}
	}
}

func ptr[T any](v T) *T { return &v }
