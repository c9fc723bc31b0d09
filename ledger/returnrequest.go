package ledger

import (
	"context"
	"encoding/json"
	"fmt"
)

// ReturnRequest is what seckillctl writes at a cell's return request key
// (ReturnRequestKey): give back up to Units available tokens, once per ID
// (the return's seq).
type ReturnRequest struct {
	ID    uint64 `json:"id"`
	Units uint32 `json:"units"`
}

// RequestReturn asks cell for a return of SKU s (replacing any earlier
// request).
func (l *Ledger) RequestReturn(ctx context.Context, s SKU, cell string, req ReturnRequest) error {
	_, err := l.c.Put(ctx, l.ReturnRequestKey(s, cell), mustJSON(req))
	return err
}

// ReturnRequest reads cell's return request of SKU s: found false when
// there is none, an error wrapping ErrCorrupt when the value is not a
// request (no JSON, or ID 0).
func (l *Ledger) ReturnRequest(ctx context.Context, s SKU, cell string) (req ReturnRequest, found bool, err error) {
	resp, err := l.c.Get(ctx, l.ReturnRequestKey(s, cell))
	if err != nil {
		return ReturnRequest{}, false, err
	}
	if len(resp.Kvs) == 0 {
		return ReturnRequest{}, false, nil
	}
	req, err = decodeReturnRequest(resp.Kvs[0].Value)
	return req, err == nil, err
}

func decodeReturnRequest(b []byte) (ReturnRequest, error) {
	var req ReturnRequest
	if err := json.Unmarshal(b, &req); err != nil || req.ID == 0 {
		return ReturnRequest{}, fmt.Errorf("%w: return request %q", ErrCorrupt, b)
	}
	return req, nil
}
