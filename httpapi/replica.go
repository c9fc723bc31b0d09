package httpapi

import (
	"encoding/json"

	"github.com/valyala/fasthttp"
)

// A member of a replica set (package replica) serves the API only while it
// is its set's primary. Any other replica answers every request of the API
// 421 NOT_PRIMARY naming the primary it knows ("primary", its replica
// name, and "address", its HTTP base URL, also as Location with the
// request's path), or without them and with Retry-After while no primary
// is known (a failover in progress): a client or router retries there.

// reasonNotPrimary is the error of a request sent to a replica that is not
// its set's primary.
const reasonNotPrimary = "NOT_PRIMARY"

// NotPrimary answers ctx 421 NOT_PRIMARY for replica set set, whose
// primary is primary at base URL address ("" for both while none is
// known).
func NotPrimary(ctx *fasthttp.RequestCtx, set, primary, address string) {
	body := errorBody{Error: reasonNotPrimary, Primary: primary, Address: address, ReplicaSet: set}
	if primary == "" {
		body.Detail = "this replica of " + set + " is not its primary, and no primary is known yet: retry"
		ctx.Response.Header.Set("Retry-After", "1")
	} else {
		body.Detail = "this replica of " + set + " is not its primary: send the request to " + primary
		if address != "" {
			ctx.Response.Header.Set("Location", address+string(ctx.RequestURI()))
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic("httpapi: encoding NOT_PRIMARY: " + err.Error()) // strings always encode
	}
	ctx.SetStatusCode(StatusOf(reasonNotPrimary))
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// NotPrimaryAnswer is what a 421 NOT_PRIMARY body names.
type NotPrimaryAnswer struct {
	ReplicaSet string `json:"replica_set"`
	Primary    string `json:"primary"`
	Address    string `json:"address"`
}

// ParseNotPrimary reads a 421 answer's body: ok when it is NOT_PRIMARY.
func ParseNotPrimary(body []byte) (a NotPrimaryAnswer, ok bool) {
	var b errorBody
	if json.Unmarshal(body, &b) != nil || b.Error != reasonNotPrimary {
		return NotPrimaryAnswer{}, false
	}
	return NotPrimaryAnswer{ReplicaSet: b.ReplicaSet, Primary: b.Primary, Address: b.Address}, true
}
