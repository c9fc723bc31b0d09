package httpapi

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// A definition of many SKUs (a campaign PUT, a campaign file) is one
// Define per SKU. An error after one of them was applied (a full disk
// after some SKUs were defined) leaves the campaign partly defined; the
// engine keeps the whole definition pending, as a crash would leave it
// (actors.Engine.MakeRoom), so that the next start makes it whole. The
// PUT's answer says so instead of an error that would read as "nothing
// was done": 504 RESULT_UNKNOWN (the PUT's result is not settled) with the
// campaign's URL, and a detail naming what was defined and how to finish:
// repeat the PUT (a SKU already defined as stated is left as it is), or
// let the next start finish it. A definition refused before its first
// SKU (MakeRoom: no room for its SKUs, or its list could not be kept, as
// when a replica set's etcd does not answer or the list is too large for
// it) defined nothing, and its answer says why: the operator acts on that
// reason, which a bare 400 or 503 would hide.

// notBegunReply answers a definition that MakeRoom refused with err, when
// err is one of its refusals.
func notBegunReply(err error) (reply, bool) {
	switch {
	case errors.Is(err, actors.ErrTooManySKUs):
		return errorReply(reasonTooManySKUs, err.Error()), true
	case errors.Is(err, actors.ErrInvalidArgument):
		return errorReply(reasonBadRequest, strings.TrimPrefix(err.Error(), actors.ErrInvalidArgument.Error()+": ")), true
	case errors.Is(err, actors.ErrUnavailable):
		return errorReply(ReasonUnavailable, "nothing was defined: "+
			strings.TrimPrefix(err.Error(), actors.ErrUnavailable.Error()+": ")+"; repeat the PUT"), true
	}
	return reply{}, false
}

// cutShort reports whether a Define that failed with err, the i-th of
// defs, leaves a definition of many SKUs begun and unfinished: one before
// it was applied, or its own result is unknown.
func cutShort(defs []sku.Definition, i int, err error) bool {
	return len(defs) > 1 && (i > 0 || classify(err).unknown)
}

// cutShortReply answers a campaign PUT whose i-th definition failed with
// err after it began.
func cutShortReply(campaignID string, defs []sku.Definition, i int, err error) reply {
	const finish = "repeat this PUT to finish it (SKUs already defined as stated are left as they are), or the next start will"
	detail := fmt.Sprintf("the campaign may be partly defined: the definition of %s may or may not stand (%v); %s", defs[0].SKUID, err, finish)
	if i > 0 {
		detail = fmt.Sprintf("the campaign is partly defined: %d of %d SKUs (%s), then %s failed (%v); %s",
			i, len(defs), listSKUs(defs[:i]), defs[i].SKUID, err, finish)
	}
	return reply{status: StatusOf(ReasonResultUnknown), outcome: ReasonResultUnknown,
		body: ResultUnknownBody("/admin/campaigns/"+campaignID, detail)}
}

// listSKUs names the first few SKUs of defs, and how many more there are.
func listSKUs(defs []sku.Definition) string {
	const most = 8
	var ids []string
	for _, d := range defs[:min(len(defs), most)] {
		ids = append(ids, d.SKUID)
	}
	if len(defs) > most {
		ids = append(ids, fmt.Sprintf("and %d more", len(defs)-most))
	}
	return strings.Join(ids, ", ")
}
