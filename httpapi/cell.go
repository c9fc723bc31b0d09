package httpapi

import (
	"context"
	"errors"

	"github.com/seckill/seckill/actors"
)

// Cells (package cells): a celled SKU is sold by several seckilld
// processes, each holding quota granted by the ledger. Its SOLD_OUT is
// never final and never cached (another cell may return units), and it
// carries Retry-After while the cell waits for a top-up. A reserve for a
// user of another cell is refused with 421 WRONG_CELL naming that cell
// ("cell") and, when known, its address ("address"), before any other
// answer about the SKU: an empty cell's SOLD_OUT would tell the user of
// another cell, whose own cell may have stock, a wrong answer, and a
// misrouting gateway would never learn that it misroutes.

// Reasons of the cells' answers: a request sent to the wrong cell, and
// the refusals of a campaign's claim (claimReply).
const (
	reasonWrongCell           = "WRONG_CELL"
	reasonCampaignPublished   = "CAMPAIGN_PUBLISHED"
	reasonCampaignOnOtherCell = "CAMPAIGN_ON_OTHER_CELL"
	reasonLedgerUnreachable   = ReasonLedgerUnreachable
)

// Reasons of seckill-router and of the cells' batch split (package cells),
// answered beside the cells' own: a cell that did not answer a request it
// cannot have received (or a read), and a SKU the router has no cell map
// for.
const (
	ReasonCellUnavailable = "CELL_UNAVAILABLE"
	ReasonNotCelled       = "NOT_CELLED"
	// ReasonLedgerUnreachable: etcd did not answer a question the answer
	// depends on (a cell's claim of a campaign; the router's lookup of the
	// cell that defines one); nothing was done.
	ReasonLedgerUnreachable = "LEDGER_UNREACHABLE"
	// ReasonInternal is seckilld's answer to a request whose handler
	// panicked, which the router gives too.
	ReasonInternal = reasonInternal
	// ReasonMethodNotAllowed is seckilld's answer to a method a route does
	// not serve, which the router's own routes give too.
	ReasonMethodNotAllowed = reasonMethodNotAllowed
)

// CellGuard is the optional part of an Engine that serves one cell of
// celled SKUs (package cells' Guard): the ingress asks it about each
// reserve's user as soon as the SKU is known, before its fast answers.
type CellGuard interface {
	// CheckCell returns an error wrapping actors.ErrWrongCell (an
	// *actors.WrongCellError for the cell and its address) when the SKU
	// is celled and userID belongs to another cell; nil otherwise.
	CheckCell(campaignID, skuID, userID string) error
}

// checkCell is the WRONG_CELL answer to a reserve of userID at this
// cell, counted as a validation refusal; refused is false when the user
// is this cell's (or the engine serves no cells).
func (s *Server) checkCell(campaignID, skuID, userID string) (rep reply, refused bool) {
	if s.cellGuard == nil {
		return reply{}, false
	}
	if err := s.cellGuard.CheckCell(campaignID, skuID, userID); err != nil {
		s.rejected(layerValidation)
		return wrongCellReply(err), true
	}
	return reply{}, false
}

// soldOutReply is the SOLD_OUT answer for SKU st: the fixed one, with
// Retry-After while its cell waits for a top-up.
func (s *Server) soldOutReply(st actors.Stats) reply {
	if st.Definition.Cell == "" || s.cfg.TopUpPending == nil || !s.cfg.TopUpPending(st.CampaignID, st.SKUID) {
		return replySoldOut
	}
	rep := replySoldOut
	rep.retryAfter = "1"
	return rep
}

// wrongCellReply is the 421 WRONG_CELL answer to err (errors.Is
// actors.ErrWrongCell): its text as the detail, and the owner's cell and
// address as fields when err is an *actors.WrongCellError.
func wrongCellReply(err error) reply {
	body := errorBody{Error: reasonWrongCell, Detail: err.Error()}
	var wc *actors.WrongCellError
	if errors.As(err, &wc) {
		body.Cell, body.Address = wc.Cell, wc.Address
	}
	return reasonReply(reasonWrongCell, body)
}

// A cell defines a campaign through its admin API only if the campaign is
// not published across cells, and only one cell may (package cells,
// Guard.ClaimCampaign): the errors of that claim, answered with their text.
var (
	// ErrCampaignPublished: the campaign is published across cells in
	// etcd; its SKUs are defined with seckillctl cells publish. HTTP: 409
	// CAMPAIGN_PUBLISHED.
	ErrCampaignPublished = errors.New("the campaign is published across cells: define its SKUs with `seckillctl cells publish`, not through a cell's admin API")
	// ErrCampaignOnOtherCell: another cell defines the campaign locally.
	// HTTP: 409 CAMPAIGN_ON_OTHER_CELL.
	ErrCampaignOnOtherCell = errors.New("another cell defines the campaign locally")
	// ErrLedgerUnreachable: the cell could not ask etcd whether the
	// campaign is published; nothing was defined. HTTP: 503
	// LEDGER_UNREACHABLE with Retry-After.
	ErrLedgerUnreachable = errors.New("etcd did not answer whether the campaign is published across cells; nothing was defined")
)

// CampaignClaimer must be asked before a campaign is defined through the
// admin API (Config.Claimer: a cell's guard): nil when this cell may
// define it.
type CampaignClaimer interface {
	ClaimCampaign(ctx context.Context, campaignID string) error
}

// claimReply answers a refused claim; ok is false for any other error.
func claimReply(err error) (r reply, ok bool) {
	switch {
	case errors.Is(err, ErrCampaignPublished):
		return errorReply(reasonCampaignPublished, err.Error()), true
	case errors.Is(err, ErrCampaignOnOtherCell):
		return errorReply(reasonCampaignOnOtherCell, err.Error()), true
	case errors.Is(err, ErrLedgerUnreachable):
		return errorReply(reasonLedgerUnreachable, err.Error()), true
	}
	return reply{}, false
}
