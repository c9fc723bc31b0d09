package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/seckill/seckill/client"
)

// SKUReserver is the Reserver of one SKU: package client's Reserve.
type SKUReserver struct {
	api               *client.Client
	campaignID, skuID string
	passes            *passMinter // nil: reserves without entry passes
}

// Reserve sends one reserve and classifies the answer: a refusal is a
// Reply, no answer an error (TransportError).
func (r *SKUReserver) Reserve(ctx context.Context, requestID, userID string) (Reply, error) {
	req := client.ReserveRequest{CampaignID: r.campaignID, SKUID: r.skuID, UserID: userID, RequestID: requestID}
	if r.passes != nil {
		// The pass gives the request_id (its own, derived from ours).
		pass, err := r.passes.mint(requestID, userID)
		if err != nil {
			return Reply{}, err
		}
		req.RequestID, req.EntryPass = "", pass
	}
	res, err := r.api.Reserve(ctx, req)
	return replyOf(res, err)
}

// replyOf classifies a reserve's result.
func replyOf(res *client.Reservation, err error) (Reply, error) {
	switch {
	case err == nil && res.ReservationID == "":
		return Reply{Outcome: OutcomeError, Detail: "202 without a reservation_id"}, nil
	case err == nil:
		return Reply{Outcome: OutcomeAccepted, ReservationID: res.ReservationID, TokenID: strconv.FormatUint(uint64(res.TokenID), 10),
			ExpireAt: res.ExpireAt}, nil
	}
	return refusalReply(err)
}

// refusalReply classifies a reserve's refusal (an *client.Error), or
// returns a transport failure as a TransportError. (Apart from replyOf,
// so that the success path does not allocate the *client.Error that
// errors.As is given.)
func refusalReply(err error) (Reply, error) {
	var e *client.Error
	if !errors.As(err, &e) {
		return Reply{}, transportError(err)
	}
	reply := Reply{Outcome: ClassifyReserve(e.Status, e.Code), ReservationID: e.ReservationID, RetryAfter: e.RetryAfter}
	if reply.Outcome == OutcomeError {
		reply.Detail = fmt.Sprintf("status %d %s", e.Status, e.Code)
	}
	return reply, nil
}
