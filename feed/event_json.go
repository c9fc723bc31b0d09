package feed

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends the event as encoding/json renders it (json.Marshal
// of CloudEvent, byte for byte: TestEventJSONMatchesMarshal), without its
// reflection, which cost about half of the CPU a feed event takes to map
// and encode. The struct tags stay the reference. The nested objects of the
// rare records (definition, lottery, cell) go through json.Marshal.
func (e *CloudEvent) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"specversion":`...)
	b = appendJSONString(b, e.SpecVersion)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"source":`...)
	b = appendJSONString(b, e.Source)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	if e.Subject != "" {
		b = append(b, `,"subject":`...)
		b = appendJSONString(b, e.Subject)
	}
	b = append(b, `,"time":`...)
	b = appendJSONString(b, e.Time)
	b = append(b, `,"datacontenttype":`...)
	b = appendJSONString(b, e.DataContentType)
	b = append(b, `,"seckillindex":`...)
	b = strconv.AppendUint(b, e.SeckillIndex, 10)
	b = append(b, `,"data":`...)
	b, err := e.Data.appendJSON(b)
	return append(b, '}'), err
}

// appendJSON appends the data object (see CloudEvent.appendJSON).
func (d *EventData) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"campaign_id":`...)
	b = appendJSONString(b, d.CampaignID)
	b = append(b, `,"sku_id":`...)
	b = appendJSONString(b, d.SKUID)
	b = appendOptionalString(b, `,"reservation_id":`, d.ReservationID)
	b = appendOptionalString(b, `,"request_id":`, d.RequestID)
	b = appendOptionalString(b, `,"user_id":`, d.UserID)
	if d.TokenID != 0 {
		b = append(b, `,"token_id":`...)
		b = strconv.AppendUint(b, uint64(d.TokenID), 10)
	}
	b = appendOptionalString(b, `,"created_at":`, d.CreatedAt)
	b = appendOptionalString(b, `,"expire_at":`, d.ExpireAt)
	b = appendOptionalString(b, `,"payment_id":`, d.PaymentID)
	if d.Amount != nil {
		b = append(b, `,"amount":`...)
		b = strconv.AppendInt(b, *d.Amount, 10)
	}
	b = appendOptionalString(b, `,"reason":`, d.Reason)
	if d.TokenReleased != nil {
		b = append(b, `,"token_released":`...)
		b = strconv.AppendBool(b, *d.TokenReleased)
	}
	b = appendOptionalString(b, `,"outcome":`, d.Outcome)
	var err error
	if d.Definition != nil {
		b, err = appendMarshalled(b, `,"definition":`, d.Definition)
	}
	if d.Tier != nil {
		b = append(b, `,"tier":`...)
		b = strconv.AppendUint(b, uint64(*d.Tier), 10)
	}
	if d.Risk != nil {
		b = append(b, `,"risk":`...)
		b = strconv.AppendUint(b, uint64(*d.Risk), 10)
	}
	if d.Lottery != nil && err == nil {
		b, err = appendMarshalled(b, `,"lottery":`, d.Lottery)
	}
	if d.Cell != nil && err == nil {
		b, err = appendMarshalled(b, `,"cell":`, d.Cell)
	}
	return append(b, '}'), err
}

// appendOptionalString appends key and s unless s is empty (omitempty).
func appendOptionalString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendMarshalled appends key and json.Marshal(v).
func appendMarshalled(b []byte, key string, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(append(b, key...), j...), err
}

// jsonVerbatim marks the bytes encoding/json copies as they are in a
// string: printable ASCII but '"', '\\' and the HTML characters.
var jsonVerbatim = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s quoted as encoding/json quotes it: a string
// of printable ASCII without '"', '\\' and the HTML characters '<', '>',
// '&' (ids, types, times: nearly every string of an event) is copied;
// anything else takes json.Marshal's escaping (\u003c, \ufffd for invalid
// UTF-8, \u2028, ...).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonVerbatim[s[i]] {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
