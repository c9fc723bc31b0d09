package httpapi

import (
	"strconv"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// Headers of an answer a standby served from its committed records.
const (
	// HeaderReadFrom is "standby" on such an answer.
	HeaderReadFrom = "X-Seckill-Read-From"
	// HeaderCommitIndex is the commit index of the SKU's log that the
	// standby's state reaches: the answer shows every record committed up
	// to it, and none after.
	HeaderCommitIndex = "X-Seckill-Commit-Index"
)

// StandbyReader is a standby's state of the committed records it applied
// (replica/stream.Standby). Each read returns the commit index the state
// reaches; an error means it cannot answer (the record is not among those
// applied, or the SKU is not copied here).
type StandbyReader interface {
	Get(reservationID string) (sku.View, uint64, error)
	Lookup(campaignID, skuID, requestID string) (sku.Result, uint64, error)
}

// StandbyRead answers, from r, a GET (or HEAD) of a reservation
// (/v1/reservations/{reservation_id}) or of a request_id
// (/v1/campaigns/{c}/skus/{s}/requests/{request_id}) whose record r holds,
// as the primary answers it, with HeaderReadFrom and HeaderCommitIndex.
// It returns false, answering nothing, for any other request and for a
// record r does not hold: a standby cannot tell a record that does not
// exist from one committed after the index it applied, so the primary
// answers those (the caller sends 421 NOT_PRIMARY).
func StandbyRead(ctx *fasthttp.RequestCtx, r StandbyReader) bool {
	if !ctx.IsGet() && !ctx.IsHead() {
		return false
	}
	path := string(ctx.Path())
	var (
		rep   reply
		index uint64
		err   error
	)
	if id, ok := strings.CutPrefix(path, "/v1/reservations/"); ok && id != "" && !strings.Contains(id, "/") {
		var v sku.View
		if v, index, err = r.Get(id); err != nil {
			return false
		}
		rep = reservationReply(v)
	} else if campaignID, skuID, requestID, ok := requestPath(path); ok {
		var res sku.Result
		if res, index, err = r.Lookup(campaignID, skuID, requestID); err != nil {
			return false
		}
		rep = lookupReply(requestID, res)
	} else {
		return false
	}
	ctx.Response.Header.Set("Cache-Control", "private, no-cache")
	ctx.Response.Header.Set(HeaderReadFrom, "standby")
	ctx.Response.Header.Set(HeaderCommitIndex, strconv.FormatUint(index, 10))
	write(ctx, rep)
	return true
}

// requestPath splits /v1/campaigns/{c}/skus/{s}/requests/{request_id}.
func requestPath(path string) (campaignID, skuID, requestID string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1/campaigns/")
	if !ok {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[1] != "skus" || parts[3] != "requests" {
		return "", "", "", false
	}
	campaignID, skuID, requestID = parts[0], parts[2], parts[4]
	return campaignID, skuID, requestID, sku.ValidID(campaignID) && sku.ValidID(skuID) && sku.ValidID(requestID)
}
