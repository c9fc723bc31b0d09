package httpapi

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// A definition of many SKUs (a campaign PUT, a campaign file) is one
// DefineAll, each SKU in its own log. An error after one of them was
// applied (a full disk after some SKUs were defined, a replica set's
// primary deposed) leaves the campaign partly defined; the engine keeps
// the whole definition pending, as a crash would leave it
// (actors.Engine.MakeRoom), so that it is made whole later: by a single node's next start, by a replica set's
// next primary (actors.Engine.PendingFinisher). The PUT's answer says so
// instead of an error that would read as "nothing was done": 504
// RESULT_UNKNOWN (the PUT's result is not settled) with the campaign's
// URL, and a detail naming what was defined and how it is finished
// (finishDetail). A definition refused before its first SKU (MakeRoom: no
// room for its SKUs, or its list could not be kept, as when a replica
// set's etcd does not answer or the list is too large for it) defined
// nothing, and its answer says why: the operator acts on that reason,
// which a bare 400 or 503 would hide.

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

// firstFailure returns the first definition of a list that failed, in the
// list's order, and its error: every one before it is durable
// (actors.Engine.DefineAll). -1 and nil when none failed.
func firstFailure(errs []error) (int, error) {
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}

// cutShort reports whether a definition of defs that failed (errs, one
// per definition: actors.Engine.DefineAll) was left begun and unfinished:
// one of them was applied, or one's result is unknown.
func cutShort(defs []sku.Definition, errs []error) bool {
	if len(defs) < 2 {
		return false
	}
	for _, err := range errs {
		if err == nil || classify(err).unknown {
			return true
		}
	}
	return false
}

// cutShortReply answers a campaign PUT whose definitions failed (errs)
// after they began, kept for finisher to finish.
func cutShortReply(campaignID string, defs []sku.Definition, errs []error, finisher actors.Finisher) reply {
	finish := finishDetail(finisher)
	i, err := firstFailure(errs)
	var defined []sku.Definition
	for j, err := range errs {
		if err == nil {
			defined = append(defined, defs[j])
		}
	}
	detail := fmt.Sprintf("the campaign may be partly defined: the definition of %s may or may not stand (%v); %s", defs[i].SKUID, err, finish)
	if len(defined) > 0 {
		detail = fmt.Sprintf("the campaign is partly defined: %d of %d SKUs (%s), then %s failed (%v); %s",
			len(defined), len(defs), listSKUs(defined), defs[i].SKUID, err, finish)
	}
	return reply{status: StatusOf(ReasonResultUnknown), outcome: ReasonResultUnknown,
		body: ResultUnknownBody("/admin/campaigns/"+campaignID, detail)}
}

// finishDetail tells the operator of a PUT cut short how it is finished,
// as true of the node that answers: a single node keeps the list in its
// data dir for its next start; a replica set keeps it in etcd, where the
// set's next primary finishes it (the answering node may be a primary
// deposed in the middle of the PUT, whose next start, as standby,
// finishes nothing), and a repeat of the PUT does so at once only on the
// primary (a standby answers 421 NOT_PRIMARY, naming it).
func finishDetail(f actors.Finisher) string {
	const asStated = "(SKUs already defined as stated are left as they are)"
	if f == actors.FinishedByNextPrimary {
		return "the replica set's next primary finishes it as it takes the lead, or this PUT repeated to the set's primary does " + asStated
	}
	return "repeat this PUT to finish it " + asStated + ", or the next start will"
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
