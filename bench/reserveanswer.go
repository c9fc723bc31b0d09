package bench

import (
	"fmt"

	"github.com/valyala/fastjson"
)

// reserveFields are the parts of a reservation answer's body that the
// driver uses.
type reserveFields struct {
	reservationID string
	tokenID       string
	expireAt      string
	errorCode     string
}

// reserveParsers are reused across answers: decoding the flood of
// reservation answers allocates only the field strings.
var reserveParsers fastjson.ParserPool

// decodeReserveAnswer reads the fields of a reservation answer's body (the
// JSON of ReserveAnswer) with fastjson, without reflection. An empty body
// reads as no fields. Otherwise the body must be one JSON object; keys match
// exactly, the last of a repeated key wins and other keys are ignored.
// reservation_id and token_id read as FlexibleID reads them (a string, a
// number's text, or null for none); expire_at and error must be strings or
// null. Anything else is an error, with the fields read so far.
func decodeReserveAnswer(body []byte) (reserveFields, error) {
	var fields reserveFields
	if len(body) == 0 {
		return fields, nil
	}
	parser := reserveParsers.Get()
	defer reserveParsers.Put(parser)
	value, err := parser.ParseBytes(body)
	if err != nil {
		return fields, fmt.Errorf("reservation answer: %w", err)
	}
	object, err := value.Object()
	if err != nil {
		return fields, fmt.Errorf("reservation answer: %w", err)
	}
	object.Visit(func(key []byte, value *fastjson.Value) {
		if err != nil {
			return
		}
		switch string(key) {
		case "reservation_id":
			fields.reservationID, err = idText(value)
		case "token_id":
			fields.tokenID, err = idText(value)
		case "expire_at":
			fields.expireAt, err = stringText(value)
		case "error":
			fields.errorCode, err = stringText(value)
		}
		if err != nil {
			err = fmt.Errorf("reservation answer: %s: %w", key, err)
		}
	})
	return fields, err
}

// idText reads an id as FlexibleID does: a string's content, a number's
// text, or "" for null.
func idText(value *fastjson.Value) (string, error) {
	if value.Type() == fastjson.TypeNumber {
		return string(value.MarshalTo(nil)), nil
	}
	return stringText(value)
}

// stringText reads a string's content, or "" for null.
func stringText(value *fastjson.Value) (string, error) {
	if value.Type() == fastjson.TypeNull {
		return "", nil
	}
	text, err := value.StringBytes()
	return string(text), err
}
