package bench

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/seckill/seckill/bench/fakeapi"
)

// apiTime is the API's format of times (timeLayout).
var apiTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// The fake API follows seckilld's rules: the same payment, cancel,
// reserve and campaign bodies get the same statuses and error codes from
// both (keys exact and once), the bodies the client builds pass both, and
// both write times in one format, which the client reads.
func TestFakeAPIFollowsSeckilld(t *testing.T) {
	targets := map[string]string{
		"fakeapi":  startFake(t, fakeapi.Options{AdminToken: "admin"}).URL(),
		"seckilld": startSeckilld(t, "admin", ""),
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client, err := NewClient(ClientOptions{Target: target, AdminToken: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			if err := client.PutCampaign(ctx, CampaignSpec{CampaignID: "bodies", StartAt: FormatTime(now.Add(-time.Second)),
				EndAt: FormatTime(now.Add(time.Hour)), PaymentWindow: "15m", ReleaseOnClose: true,
				SKUs: []SKUSpec{{SKUID: "s", SaleLimit: 5}}}); err != nil {
				t.Fatal(err)
			}
			reserve := func(requestID, userID string) string {
				reply, err := client.SKU("bodies", "s").Reserve(ctx, requestID, userID)
				if err != nil || reply.Outcome != OutcomeAccepted {
					t.Fatalf("reserve %s: %+v %v", requestID, reply, err)
				}
				return reply.ReservationID
			}
			id, other := reserve("r1", "u1"), reserve("r2", "u2")
			send := func(method, path, body string, wantStatus int, wantCode string) {
				t.Helper()
				got, err := client.do(ctx, exchange{method: method, path: path, body: []byte(body), admin: method == "PUT"})
				if err != nil {
					t.Fatal(err)
				}
				var answer StateAnswer
				_ = json.Unmarshal(got.body, &answer)
				if got.status != wantStatus || answer.Error != wantCode {
					t.Errorf("%s %s %s: %d %s, want %d %s", method, path, body, got.status, got.body, wantStatus, wantCode)
				}
			}
			post := func(path, body string, wantStatus int, wantCode string) {
				t.Helper()
				send("POST", path, body, wantStatus, wantCode)
			}
			pay, cancelPath := "/v1/reservations/"+id+"/payment", "/v1/reservations/"+id+"/cancel"
			post(pay, `{"payment_id":"p-mm","reservation_id":"`+other+`"}`, 400, "RESERVATION_MISMATCH")
			post(pay, `{"payment_id":"p-mm","reservation_id":""}`, 400, "RESERVATION_MISMATCH")
			post(pay, `{"payment_id":"p-u","x":1}`, 400, "BAD_REQUEST")
			post(pay, `{"payment_id":"p-n","amount":-1}`, 400, "BAD_REQUEST")
			post(pay, `{"amount":1}`, 400, "BAD_REQUEST")
			post(cancelPath, `{"reason":"x"}`, 400, "BAD_REQUEST")
			post(cancelPath, ` null `, 400, "BAD_REQUEST")
			post(cancelPath, "\v", 400, "BAD_REQUEST") // not JSON whitespace
			post(pay, `null`, 400, "BAD_REQUEST")
			// Keys are exact (case-sensitive) and given once, in every body.
			post(pay, `{"Payment_Id":"z1","AMOUNT":777}`, 400, "BAD_REQUEST")
			post(pay, `{"payment_id":"z1","AMOUNT":777}`, 400, "BAD_REQUEST")
			post(pay, `{"payment_id":"p1","payment_id":"p2"}`, 400, "BAD_REQUEST")
			reservations := "/v1/campaigns/bodies/skus/s/reservations"
			post(reservations, `{"Request_ID":"r9","user_id":"u9"}`, 400, "BAD_REQUEST")
			post(reservations, `{"request_id":"r9","user_id":"u9","user_id":"u8"}`, 400, "BAD_REQUEST")
			campaign := `{"campaign_id":"keys","start_at":"` + FormatTime(now.Add(-time.Second)) + `","end_at":"` +
				FormatTime(now.Add(time.Hour)) + `","payment_window":"15m","release_on_close":true,`
			send("PUT", "/admin/campaigns/keys", campaign+`"skus":[{"SKU_ID":"a","Sale_Limit":5}]}`, 400, "BAD_REQUEST")
			send("PUT", "/admin/campaigns/keys", campaign+`"skus":[{"sku_id":"a","sale_limit":5,"sale_limit":6}]}`, 400, "BAD_REQUEST")
			send("PUT", "/admin/campaigns/keys", campaign+`"skus":[],"skus":[{"sku_id":"a","sale_limit":5}]}`, 400, "BAD_REQUEST")
			send("PUT", "/admin/campaigns/keys", `{"Campaign_Id":"keys"`+campaign[len(`{"campaign_id":"keys"`):]+
				`"skus":[{"sku_id":"a","sale_limit":5}]}`, 400, "BAD_REQUEST")

			answer, status, err := client.Pay(ctx, id, PaymentRequest{PaymentID: "p-1", Amount: 100, ReservationID: id})
			if err != nil || status != 200 || answer.State != "PAID" {
				t.Fatalf("client payment: %d %+v %v", status, answer, err)
			}
			read, status, err := client.Reservation(ctx, id)
			if err != nil || status != 200 || !apiTime.MatchString(read.ExpireAt) || !apiTime.MatchString(read.PaidAt) {
				t.Errorf("reservation's times: %d %+v %v", status, read, err)
			}
			accepted, err := client.do(ctx, exchange{method: "POST", path: "/v1/campaigns/bodies/skus/s/reservations",
				body: []byte(`{"request_id":"r3","user_id":"u3"}`)})
			var fields ReserveAnswer
			if err != nil || json.Unmarshal(accepted.body, &fields) != nil || !apiTime.MatchString(fields.ExpireAt) {
				t.Errorf("202's expire_at: %s %v", accepted.body, err)
			}
			if at, err := ParseTime(fields.ExpireAt); err != nil || at.Before(now) {
				t.Errorf("ParseTime(%q): %v %v", fields.ExpireAt, at, err)
			}
			post(cancelPath, `{}`, 409, "NOT_CLOSABLE")
			answer, status, err = client.Cancel(ctx, other)
			if err != nil || status != 200 || answer.State != "CLOSED" {
				t.Fatalf("client cancel: %d %+v %v", status, answer, err)
			}
		})
	}
}
