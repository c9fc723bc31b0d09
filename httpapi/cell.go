package httpapi

import (
	"errors"

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
