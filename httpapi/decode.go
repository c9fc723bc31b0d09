package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// decodeJSON decodes one JSON object from body into v: no unknown fields,
// nothing after it. Strings in v are copies, never views of the request
// buffer, so they outlive the handler.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty body, a JSON object is expected")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: data after the object")
	}
	return nil
}

// decodeNoFields checks the optional body of a route that takes no
// parameters in it (cancel): nothing, or an empty JSON object. A field is
// refused like an unknown field anywhere else.
func decodeNoFields(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeJSON(body, &struct{}{})
}

// checkID returns a detail message when id is not a valid id (sku.ValidID:
// 1-64 characters of [A-Za-z0-9._:-]), "" when it is.
func checkID(field, id string) string {
	if sku.ValidID(id) {
		return ""
	}
	return fmt.Sprintf("%s must be 1-%d characters of [A-Za-z0-9._:-]", field, sku.MaxIDLength)
}

// pathParam returns a path parameter set by the router. The router stores
// copies, so the string outlives the request.
func pathParam(ctx *fasthttp.RequestCtx, name string) string {
	v, _ := ctx.UserValue(name).(string)
	if strings.IndexByte(v, '%') >= 0 {
		// The router matches the raw path: undo percent-encoding (RFC 3986
		// §2.1; "%7E" is "~"). Ids have no '%' of their own.
		if u, err := url.PathUnescape(v); err == nil {
			return u
		}
	}
	return v
}

// pathSKU returns the campaign and SKU ids of the path, and false when
// either is not a valid id: such a SKU cannot exist (404).
func pathSKU(ctx *fasthttp.RequestCtx) (campaignID, skuID string, ok bool) {
	campaignID, skuID = pathParam(ctx, "campaign_id"), pathParam(ctx, "sku_id")
	return campaignID, skuID, sku.ValidID(campaignID) && sku.ValidID(skuID)
}

// pathReservation returns the reservation id of the path, and false when it
// is not one sku.FormatReservationID could have made (404).
func pathReservation(ctx *fasthttp.RequestCtx) (string, bool) {
	id := pathParam(ctx, "reservation_id")
	if _, _, _, _, err := sku.ParseReservationID(id); err != nil {
		return "", false
	}
	return id, true
}
