package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi/jsonkeys"
	"github.com/seckill/seckill/lottery"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// maxDetail bounds the variable part of a 400 detail (a parser's message,
// a value the client sent), so a small malformed body never gets a large
// answer.
const maxDetail = 160

// boundDetail cuts msg to maxDetail bytes, marking the cut.
func boundDetail(msg string) string {
	if len(msg) <= maxDetail {
		return msg
	}
	return msg[:maxDetail] + "..."
}

// quoteInput quotes a value the client sent (a query parameter's name or
// value) for a detail, cut to maxDetail bytes as boundDetail cuts.
func quoteInput(v string) string { return strconv.Quote(boundDetail(v)) }

// jsonSpace is the whitespace JSON allows around a value (RFC 8259, section 2);
// bytes.TrimSpace would also take Unicode spaces, which JSON does not.
const jsonSpace = " \t\r\n"

// invalidJSON is a body that is not one complete JSON text: empty, cut
// short, not JSON, or with more after its value. It is answered 400
// INVALID_JSON (bodyError); a body that is JSON but not what the route
// takes (another type, an unknown, repeated or missing field, a bad value)
// is 400 BAD_REQUEST.
type invalidJSON struct{ detail string }

func (e *invalidJSON) Error() string { return e.detail }

// errEmptyBody is a body with nothing in it (JSON whitespace at most).
var errEmptyBody = &invalidJSON{"the body is empty: a JSON object is expected"}

// errNotObject is a body that is JSON but not an object (null, an array,
// a string, a number).
var errNotObject = errors.New("the body must be a JSON object")

// bodyError is the answer to a body decodeJSON, decodeNoFields or a
// reserve codec refused: 400 INVALID_JSON for a body that is not JSON,
// 400 BAD_REQUEST with the error as detail for any other.
func bodyError(err error) reply {
	var bad *invalidJSON
	if errors.As(err, &bad) {
		return errorReply(reasonInvalidJSON, bad.detail)
	}
	return errorReply(reasonBadRequest, err.Error())
}

// errTooDeep is a body nested deeper than the server reads: fastjson's
// bound, the tighter of the two parsers'. It is JSON, so 400 BAD_REQUEST.
var errTooDeep = fmt.Errorf("the body nests values deeper than %d levels", fastjson.MaxDepth)

// textError says what is wrong with the text of body, given the error an
// encoding/json decoder returned reading its first value: an *invalidJSON
// for a syntax error or a body cut short, errTooDeep for a value nested
// beyond encoding/json's own bound (it reports that as a syntax error, but
// the text is JSON), nil for any other error (the text is JSON; its value
// is not what was expected).
func textError(body []byte, err error) error {
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr) && strings.HasSuffix(syntaxErr.Error(), "exceeded max depth"):
		return errTooDeep
	case errors.As(err, &syntaxErr):
		return &invalidJSON{boundDetail(fmt.Sprintf("the body is not JSON: %s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset))}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &invalidJSON{fmt.Sprintf("the body is not complete JSON: it ends at byte %d, inside the %s", len(body), valueKind(body))}
	}
	return nil
}

// afterValue returns an *invalidJSON when body holds more than JSON
// whitespace after its first value, which ends at offset; nil otherwise.
func afterValue(body []byte, offset int64) error {
	rest := bytes.TrimLeft(body[offset:], jsonSpace)
	if len(rest) == 0 {
		return nil
	}
	return &invalidJSON{fmt.Sprintf("the body is not one JSON value: more follows the %s, at byte %d", valueKind(body), len(body)-len(rest)+1)}
}

// valueKind names the kind of the JSON value body starts with: "object",
// "array", "string" or "value".
func valueKind(body []byte) string {
	switch t := bytes.TrimLeft(body, jsonSpace); {
	case len(t) == 0:
		return "value"
	case t[0] == '{':
		return "object"
	case t[0] == '[':
		return "array"
	case t[0] == '"':
		return "string"
	}
	return "value"
}

// checkJSONText returns nil when body is one complete JSON text, else the
// *invalidJSON that says what is wrong with it (errTooDeep for one nested
// beyond encoding/json's bound). The reserve codecs, whose
// parser (fastjson) words its errors in its own terms, call it on their
// error path only.
func checkJSONText(body []byte) error {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return errEmptyBody
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if bad := textError(body, err); bad != nil {
			return bad
		}
		return &invalidJSON{"the body is not JSON"}
	}
	return afterValue(body, dec.InputOffset())
}

// fastjsonError is the error of a body fastjson could not parse: what
// checkJSONText finds wrong with its text, or, for the one JSON fastjson
// refuses (values nested deeper than fastjson.MaxDepth), errTooDeep.
func fastjsonError(body []byte) error {
	if err := checkJSONText(body); err != nil {
		return err
	}
	return errTooDeep
}

// decodeJSON decodes one JSON object from body into v: no unknown fields,
// nothing after it, and at every level keys spelled exactly as v's json
// tags, none repeated, none tagged jsonkeys:"required" left out
// (jsonkeys.Check: encoding/json alone folds case, lets the last of
// repeated keys win and cannot tell a missing key from its zero value). A
// bare null is refused as not an object (encoding/json would take it and
// leave v as it is), as parseReserveBody refuses it. Strings in v are
// copies, never views of the request buffer, so they outlive the handler.
// Its errors are answer details (bodyError): an *invalidJSON for a body
// that is not JSON, else one in the terms of describeDecodeError.
func decodeJSON(body []byte, v any) error {
	switch trimmed := bytes.Trim(body, jsonSpace); {
	case len(trimmed) == 0:
		return errEmptyBody
	case string(trimmed) == "null":
		return errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	// The decoder reads the whole value before it decodes any of it, so a
	// body that is not JSON is found before any field is judged.
	err := dec.Decode(v)
	if err != nil {
		if bad := textError(body, err); bad != nil {
			return bad
		}
	}
	// A body with more after its value is no JSON text, whatever its
	// first value holds (as the reserve codecs, which parse it whole, say).
	if bad := afterValue(body, dec.InputOffset()); bad != nil {
		return bad
	}
	if err != nil {
		return errors.New(describeDecodeError(locateKey(body, v, err)))
	}
	if err := jsonkeys.Check(body, v); err != nil {
		return errors.New(describeDecodeError(err))
	}
	return nil
}

// unknownFieldPrefix starts the error of a decoder with
// DisallowUnknownFields for a key its struct does not have.
const unknownFieldPrefix = "json: unknown field "

// locateKey returns, for err, a decoder's error of body into v, that is an
// unknown field, the key error jsonkeys.Check finds, which says where the
// key's object is (encoding/json names only the key: in a campaign of
// thousands of SKUs, not which one). Any other error as it is.
func locateKey(body []byte, v any, err error) error {
	if !strings.HasPrefix(err.Error(), unknownFieldPrefix) {
		return err
	}
	var keyErr *jsonkeys.Error
	if errors.As(jsonkeys.Check(body, v), &keyErr) {
		return keyErr
	}
	return err
}

// keyDetail is the detail of a key refused by its spelling, its repetition
// or its absence, the same on every route: `unknown field "x"`,
// `field "x" repeated`, `x is missing`.
func keyDetail(err *jsonkeys.Error) string {
	return boundDetail(err.Error())
}

// missingField is the error of a required field a body leaves out, for
// the decoders that do not go through jsonkeys (the reserve codecs).
func missingField(name string) error {
	return &jsonkeys.Error{Key: name, Missing: true}
}

// fieldError is a field of a body whose value is not what it must be.
type fieldError struct {
	field string // the JSON name, dotted below the top level, indexed in a list ("skus[2].sale_limit")
	of    string // what holds the field, when its path does not say it: `sku_id "c3"`; "" if nothing
	want  string // what the value must be: "an integer", "a string", ...
	cause error  // the decoder's error it renders, if any (an *json.UnmarshalTypeError)
}

// Error renders the error as "field: must be what", or "field (of): must
// be what".
func (e *fieldError) Error() string {
	if e.of != "" {
		return e.field + " (" + e.of + "): must be " + e.want
	}
	return e.field + ": must be " + e.want
}

// Unwrap returns the decoder's error, for the callers that explain it in
// their own terms (a YAML scalar read as a boolean, campaign_yaml.go).
func (e *fieldError) Unwrap() error { return e.cause }

// describeDecodeError turns an error of decoding a JSON text into a
// detail that names the field and what it must be, in JSON's terms, never
// Go's ("amount: must be an integer", not "cannot unmarshal number 1.5
// into Go struct field paymentRequest.amount of type int64"). It is at
// most maxDetail bytes and a few words long.
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var fieldErr *fieldError
	var keyErr *jsonkeys.Error
	switch {
	case errors.As(err, &fieldErr):
		return boundDetail(fieldErr.Error())
	case errors.As(err, &keyErr):
		return keyDetail(keyErr)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return errNotObject.Error()
	case errors.As(err, &typeErr):
		return boundDetail((&fieldError{field: typeErr.Field, want: typeRule(typeErr.Field, typeErr)}).Error())
	}
	// DisallowUnknownFields reports an unknown field as a plain error.
	if name, ok := strings.CutPrefix(err.Error(), unknownFieldPrefix); ok {
		return boundDetail("unknown field " + name)
	}
	return "the body is not what this route takes"
}

// fieldRules are the rules of the fields whose Go type allows more than
// the field does: a value the type refuses is answered with the field's
// own rule, not the type's range (sale_limit -1: "1 to 1073741824", not
// "0 to 4294967295", 0 being refused too).
var fieldRules = map[string]string{
	"skus.sale_limit":   fmt.Sprintf("an integer from 1 to %d", sku.MaxSaleLimit),
	"beacon.round":      fmt.Sprintf("an integer from 1 to %d", uint64(lottery.MaxRound)),
	"skus.beacon.round": fmt.Sprintf("an integer from 1 to %d", uint64(lottery.MaxRound)),
}

// typeRule says what the value of the field at path (dotted, no index:
// "skus.sale_limit") must be, the type error e having refused it: the
// field's own rule (fieldRules), else its type's in JSON's terms.
func typeRule(path string, e *json.UnmarshalTypeError) string {
	if rule := fieldRules[path]; rule != "" {
		return rule
	}
	return jsonKind(e)
}

// jsonKind says, in JSON's terms, what a value of the Go type an
// UnmarshalTypeError names must be. An integer out of the type's range
// gets the range.
func jsonKind(e *json.UnmarshalTypeError) string {
	t := e.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if integerLiteral(e.Value) {
			lowest, highest := signedRange(t)
			return fmt.Sprintf("an integer from %d to %d", lowest, highest)
		}
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if integerLiteral(e.Value) {
			return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64>>(64-t.Bits())))
		}
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}

// signedRange is the range of values of a signed integer type: its
// size's, or from 0 for minorUnits (an amount of money).
func signedRange(t reflect.Type) (lowest, highest int64) {
	highest = math.MaxInt64 >> (64 - t.Bits())
	if t == reflect.TypeFor[minorUnits]() {
		return 0, highest
	}
	return -highest - 1, highest
}

// jsonValueKind names the kind of a JSON value other than null as
// UnmarshalTypeError.Value does: "number 1.5" (with the number), "string",
// "bool", "array", "object".
func jsonValueKind(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte(`"`)):
		return "string"
	case bytes.HasPrefix(data, []byte("t")), bytes.HasPrefix(data, []byte("f")):
		return "bool"
	case bytes.HasPrefix(data, []byte("[")):
		return "array"
	case bytes.HasPrefix(data, []byte("{")):
		return "object"
	}
	return "number " + string(data)
}

// integerLiteral reports whether an UnmarshalTypeError's Value ("number
// 1.5", "number -1", "string") is an integer: then it was refused for its
// range, not its form.
func integerLiteral(value string) bool {
	n, ok := strings.CutPrefix(value, "number ")
	return ok && !strings.ContainsAny(n, ".eE")
}

// decodeNoFields checks the optional body of a route that takes no
// parameters in it (cancel; the admin pause, resume, snapshot and
// release): nothing (JSON whitespace at most), or an empty JSON object. A
// field is refused like an unknown field anywhere else; null, any other
// value and anything that is not JSON are refused as decodeJSON refuses
// them (the latter with an *invalidJSON).
func decodeNoFields(body []byte) error {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return nil
	}
	return decodeJSON(body, &struct{}{})
}

// checkID returns a detail message when id is not a valid id (sku.ValidID,
// worded by sku.IDRule), "" when it is.
func checkID(field, id string) string {
	if sku.ValidID(id) {
		return ""
	}
	return field + " must be " + sku.IDRule
}

// pathParam returns a path parameter set by the router. The router stores
// copies, so the string outlives the request.
func pathParam(ctx *fasthttp.RequestCtx, name string) string {
	v, _ := ctx.UserValue(name).(string)
	if strings.IndexByte(v, '%') >= 0 {
		// The router matches the raw path: undo percent-encoding (RFC 3986,
		// section 2.1; "%7E" is "~"). Ids have no '%' of their own.
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

// badPathID answers an admin path whose campaign or SKU id breaks the id
// rule: 400 with the rule, as the same id in a body gets (an operator's
// typo deserves the reason; a public route answers 404, as for any SKU
// that does not exist).
func badPathID(ctx *fasthttp.RequestCtx) reply {
	for _, field := range []string{"campaign_id", "sku_id"} {
		if ctx.UserValue(field) == nil {
			continue
		}
		if rule := checkID(field, pathParam(ctx, field)); rule != "" {
			return errorReply(reasonBadRequest, rule+" (in the path)")
		}
	}
	return errorReply(reasonNotFound, "")
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
