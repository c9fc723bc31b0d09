package actors

// The published figures of the engine's SKUs by name, as values: for
// callers that should hold no *SKU handle (the HTTP ingress, through its
// small engine interfaces).

// SKUStats returns the published Stats of one SKU (SKU.Stats); ok is false
// when SKU(campaignID, skuID) is nil.
func (e *Engine) SKUStats(campaignID, skuID string) (st Stats, ok bool) {
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return Stats{Definition: &noDefinition}, false
	}
	return h.Stats(), true
}

// MayKnowRequest reports whether the SKU may have decided requestID
// already (SKU.MayKnowRequest); true, "ask the engine", for a SKU it does
// not know.
func (e *Engine) MayKnowRequest(campaignID, skuID, requestID string) bool {
	h := e.SKU(campaignID, skuID)
	return h == nil || h.MayKnowRequest(requestID)
}

// AllStats returns the published Stats of every SKU, in the order of SKUs.
func (e *Engine) AllStats() []Stats {
	hs := e.SKUs()
	out := make([]Stats, len(hs))
	for i, h := range hs {
		out[i] = h.Stats()
	}
	return out
}
