package httpapi

import (
	"context"
	"errors"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// Engine is what the HTTP service needs from the sequencer: the commands
// of the reservation flow, the SKUs' published figures and the operator's
// commands, exactly the methods it calls, in three small interfaces.
// *actors.Engine satisfies it; the fault tests run it behind hooks that
// fail, hold or order its commands (faultengine_test.go), never a copy of
// its rules.
//
// Every command method blocks until its answer is durable (fsynced) or ctx
// is done; a ctx error means the command may or may not have been applied
// (RESULT_UNKNOWN).
type Engine interface {
	Reserver
	StatsReader
	ActivityReader
	Admin
}

// Reserver runs the commands of the reservation flow.
type Reserver interface {
	// ReserveWith asks for a token for userID, once per requestID, with
	// the holder an entry pass vouched for (the zero Holder without one;
	// recorded, counted against max_unpaid_per_subject). It is the
	// ingress's one reserve, so a wrapper of the engine (a cell's guard, a
	// test's faults) has one method to wrap.
	ReserveWith(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.Result, error)
	// Pay records a payment for a reservation.
	Pay(ctx context.Context, reservationID, paymentID string, amount int64) (sku.Result, error)
	// Release returns the token of a closed reservation that still holds
	// it (release_on_close=false): an operator's restock.
	Release(ctx context.Context, reservationID string) (sku.Result, error)
	// Cancel closes an unpaid reservation.
	Cancel(ctx context.Context, reservationID string) (sku.Result, error)
	// Get returns the durable state of a reservation.
	Get(ctx context.Context, reservationID string) (sku.View, error)
	// Lookup returns the durable answer a request_id got, or actors.ErrNotFound.
	Lookup(ctx context.Context, campaignID, skuID, requestID string) (sku.Result, error)
	// ReserveBatch runs reserves of one SKU as one batch, decided in
	// order: one result per item, each what ReserveWith would have answered
	// it (see actors.Engine.ReserveBatch).
	ReserveBatch(ctx context.Context, campaignID, skuID string, items []actors.ReserveItem) ([]actors.ItemResult, error)
}

// StatsReader reads what the SKUs publish without a message to them: their
// durable definition, counts and pause, their availability and load
// (actors.Stats). Values, never handles.
type StatsReader interface {
	// SKUStats returns the published stats of one SKU; ok is false while
	// the engine does not know it (also before its definition is durable).
	SKUStats(campaignID, skuID string) (st actors.Stats, ok bool)
	// MayKnowRequest reports whether the SKU may have decided requestID
	// already. False is certain (the ingress may answer from its fast
	// paths); true means "ask the engine".
	MayKnowRequest(campaignID, skuID, requestID string) bool
	// AllStats returns the published stats of every SKU, sorted by
	// campaign and SKU id.
	AllStats() []actors.Stats
}

// Admin runs the operator's commands.
type Admin interface {
	// DefineAll creates or redefines the SKUs of defs, side by side, as
	// one after another stopping at the first error would
	// (actors.Engine.DefineAll): one error per definition, nil once it is
	// durable, actors.ErrNotBegun for one not begun; a change that is not
	// allowed is an error wrapping sku.ErrInvalidDefinition, a new SKU
	// beyond the engine's limit one wrapping actors.ErrTooManySKUs. each
	// bounds the wait for each definition's answer.
	DefineAll(ctx context.Context, defs []sku.Definition, each time.Duration) []error
	// MakeRoom holds, before any is defined, the places of the SKUs of defs
	// that do not exist yet, or refuses them all with an error wrapping
	// actors.ErrTooManySKUs; release frees the places not used, and says
	// whether an error cut the definition short after it began (cutShort):
	// then PendingFinisher finishes it.
	MakeRoom(defs []sku.Definition) (release func(cut bool), err error)
	// PendingFinisher is who finishes a definition MakeRoom's release(true)
	// kept: a single node's next start, a replica set's next primary.
	PendingFinisher() actors.Finisher
	// PartlyDefined reports whether a definition of many SKUs naming the
	// campaign began and is unfinished: cut short by an error and kept
	// for the next start to finish (MakeRoom's release(true)), or cut by
	// a crash and not finished yet (a replica set's new primary finishes
	// it while it serves); GET of the campaign says so.
	PartlyDefined(campaignID string) bool
	// Pause stops admission on a SKU.
	Pause(ctx context.Context, campaignID, skuID string) error
	// Resume restarts admission on a SKU.
	Resume(ctx context.Context, campaignID, skuID string) error
	// Audit recounts a SKU and checks its invariants.
	Audit(ctx context.Context, campaignID, skuID string) (sku.Audit, error)
	// CampaignAudit audits every SKU of a campaign and, with
	// purchase_limit "campaign", one live purchase per user over them
	// (actors.Engine.CampaignAudit).
	CampaignAudit(ctx context.Context, campaignID string) (actors.CampaignAudit, error)
	// Refunds lists the payments of a SKU that must be refunded.
	Refunds(ctx context.Context, campaignID, skuID string) ([]sku.Refund, error)
	// Snapshot writes a snapshot of one SKU now and truncates its log.
	Snapshot(ctx context.Context, campaignID, skuID string) (actors.SnapshotInfo, error)
}

// engineFailure is how an engine error is answered.
type engineFailure struct {
	reason string // the "error" field; its status is statusOf's
	// unknown is set when the command may or may not have been applied:
	// the answer carries a status_url to poll.
	unknown bool
}

// failureReply is the answer of failure f of the engine's err (not
// unknown): its fixed error; for WRONG_CELL the cell to go to
// (wrongCellReply); for QUEUE_FULL (actors.ErrBusy) the answer of
// admission's own refusal, with its Retry-After (queueFull): a busy
// engine decided nothing either, and every 429 says when to retry.
func (s *Server) failureReply(f engineFailure, err error) reply {
	switch f.reason {
	case reasonWrongCell:
		return wrongCellReply(err)
	case reasonQueueFull:
		return s.queueFull()
	}
	return errorReply(f.reason, "")
}

// classify maps an engine error onto an answer. Anything it does not know
// is INTERNAL (and logged by the caller).
func classify(err error) engineFailure {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, actors.ErrResultUnknown):
		return engineFailure{reason: ReasonResultUnknown, unknown: true}
	case errors.Is(err, actors.ErrUnknownSKU), errors.Is(err, actors.ErrNotFound), errors.Is(err, sku.ErrBadReservationID):
		return engineFailure{reason: reasonNotFound}
	case errors.Is(err, actors.ErrUnavailable), errors.Is(err, actors.ErrClosed):
		return engineFailure{reason: ReasonUnavailable}
	case errors.Is(err, actors.ErrBusy):
		return engineFailure{reason: reasonQueueFull}
	case errors.Is(err, actors.ErrInvalidArgument):
		return engineFailure{reason: reasonBadRequest}
	case errors.Is(err, sku.ErrInvalidDefinition):
		return engineFailure{reason: reasonDefinitionConflict}
	case errors.Is(err, actors.ErrTooManySKUs):
		return engineFailure{reason: reasonTooManySKUs}
	case errors.Is(err, actors.ErrWrongCell):
		return engineFailure{reason: reasonWrongCell}
	}
	return engineFailure{reason: reasonInternal}
}
