package httpapi

import (
	"bufio"
	"encoding/json"

	"github.com/seckill/seckill/feed"
	"github.com/valyala/fasthttp"
)

// exportEnd is the last line of a reservations export: the log index the
// export is as of, and the feed cursor to continue from.
type exportEnd struct {
	AsOfIndex  uint64 `json:"as_of_index"`
	NextCursor string `json:"next_cursor"`
}

// handleExport is GET /admin/campaigns/{c}/skus/{s}/reservations: every
// reservation of the SKU as JSON lines (the shape of GET
// /v1/reservations/{id} with what only events carry: feed.ExportRow), in
// sequence order, as of one durable log index,
// then a last line {"as_of_index","next_cursor"} (feed.Export). A feed
// consumer whose cursor was compacted (410) replaces its table with these
// rows and reads the feed after next_cursor: it then holds what a consumer
// that never fell behind holds. The lines are streamed.
func (s *Server) handleExport(ctx *fasthttp.RequestCtx) string {
	campaignID, _ := ctx.UserValue("campaign_id").(string)
	skuID, _ := ctx.UserValue("sku_id").(string)
	if s.feed == nil {
		return write(ctx, errorReply(reasonNotFound, "this engine serves no export"))
	}
	export, err := s.feed.Export(campaignID, skuID)
	if err != nil {
		return write(ctx, s.feedReply("admin_export", err))
	}
	m, end := export.State, exportEnd{AsOfIndex: export.AsOf, NextCursor: export.NextCursor}
	conn, writeTimeout := ctx.Conn(), s.cfg.WriteTimeout
	ctx.SetContentType("application/x-ndjson")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		out := StreamWriter(conn, w, writeTimeout)
		enc := json.NewEncoder(out)
		n := m.Counts().Reservations
		for seq := uint32(1); seq <= n; seq++ {
			v, found := m.Get(seq)
			if !found {
				continue
			}
			if enc.Encode(feed.NewExportRow(v)) != nil {
				return
			}
		}
		if enc.Encode(end) == nil {
			out.Flush()
		}
	})
	return outcomeOK
}
