package httpapi

import (
	"context"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors"
)

// Cells (package cells): a celled SKU is sold by several seckilld
// processes, each holding quota granted by the ledger. Its SOLD_OUT is
// never final and never cached (another cell may return units), and it
// carries Retry-After while the cell waits for a top-up. A reserve for a
// user of another cell is refused with 421 WRONG_CELL naming that cell.

// reasonWrongCell is the error of a request sent to the wrong cell.
const reasonWrongCell = "WRONG_CELL"

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

// wrongCellDetail is the detail of a WRONG_CELL answer: the error's text,
// which names the user's cell; "" for other errors.
func wrongCellDetail(err error) string {
	if errors.Is(err, actors.ErrWrongCell) {
		return err.Error()
	}
	return ""
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
		return errorReply(fasthttp.StatusConflict, "CAMPAIGN_PUBLISHED", err.Error()), true
	case errors.Is(err, ErrCampaignOnOtherCell):
		return errorReply(fasthttp.StatusConflict, "CAMPAIGN_ON_OTHER_CELL", err.Error()), true
	case errors.Is(err, ErrLedgerUnreachable):
		r = errorReply(fasthttp.StatusServiceUnavailable, "LEDGER_UNREACHABLE", err.Error())
		r.retryAfter = "1"
		return r, true
	}
	return reply{}, false
}
