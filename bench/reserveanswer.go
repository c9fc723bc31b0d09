package bench

import "encoding/json"

// reserveFields are the parts of a reservation answer's body that the
// driver uses.
type reserveFields struct {
	reservationID string
	tokenID       string
	expireAt      string
	errorCode     string
}

// decodeReserveAnswer reads a reservation answer's body. An empty body
// reads as no fields. Bodies in the plain shape seckilld writes are read by
// scanReserveAnswer without reflection; anything else goes through
// encoding/json into ReserveAnswer, whose error is returned.
func decodeReserveAnswer(body []byte) (reserveFields, error) {
	if fields, ok := scanReserveAnswer(body); ok {
		return fields, nil
	}
	var answer ReserveAnswer
	err := json.Unmarshal(body, &answer)
	return reserveFields{
		reservationID: string(answer.ReservationID),
		tokenID:       string(answer.TokenID),
		expireAt:      answer.ExpireAt,
		errorCode:     answer.Error,
	}, err
}

// scanReserveAnswer reads body when it has the plain shape of seckilld's
// answers, and reports false otherwise so that the caller falls back to
// encoding/json. The plain shape is empty, or one JSON object (whitespace
// allowed) whose keys are spelled exactly as ReserveAnswer's fields or
// "detail" (the error answers' text), whose strings are printable ASCII
// without escapes, and whose ids are strings or integers. On such a body
// the result equals what encoding/json gives, a repeated key included (the
// last one wins); the tests compare both on many bodies.
func scanReserveAnswer(body []byte) (reserveFields, bool) {
	var fields reserveFields
	if len(body) == 0 {
		return fields, true
	}
	s := answerScanner{body: body}
	s.space()
	if !s.take('{') {
		return fields, false
	}
	s.space()
	if !s.take('}') {
		for {
			key, ok := s.plainString()
			if !ok {
				return fields, false
			}
			s.space()
			if !s.take(':') {
				return fields, false
			}
			s.space()
			var value []byte
			switch string(key) {
			case "reservation_id", "token_id":
				value, ok = s.idValue()
			case "request_id", "state", "expire_at", "status_url", "error", "detail":
				value, ok = s.plainString()
			default:
				return fields, false
			}
			if !ok {
				return fields, false
			}
			switch string(key) {
			case "reservation_id":
				fields.reservationID = string(value)
			case "token_id":
				fields.tokenID = string(value)
			case "expire_at":
				fields.expireAt = string(value)
			case "error":
				fields.errorCode = string(value)
			}
			s.space()
			if s.take('}') {
				break
			}
			if !s.take(',') {
				return fields, false
			}
			s.space()
		}
	}
	s.space()
	return fields, s.at == len(s.body)
}

// answerScanner walks a body for scanReserveAnswer.
type answerScanner struct {
	body []byte
	at   int
}

// space skips JSON whitespace.
func (s *answerScanner) space() {
	for s.at < len(s.body) {
		switch s.body[s.at] {
		case ' ', '\t', '\n', '\r':
			s.at++
		default:
			return
		}
	}
}

// take consumes b if it is next.
func (s *answerScanner) take(b byte) bool {
	if s.at < len(s.body) && s.body[s.at] == b {
		s.at++
		return true
	}
	return false
}

// plainString reads a string of printable ASCII without escapes and returns
// its content.
func (s *answerScanner) plainString() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	start := s.at
	for s.at < len(s.body) {
		b := s.body[s.at]
		switch {
		case b == '"':
			s.at++
			return s.body[start : s.at-1], true
		case b < 0x20 || b > 0x7e || b == '\\':
			return nil, false
		}
		s.at++
	}
	return nil, false
}

// idValue reads an id: a plain string, or an integer (-?(0|[1-9][0-9]*))
// whose text is the id, as FlexibleID reads it.
func (s *answerScanner) idValue() ([]byte, bool) {
	if s.at < len(s.body) && s.body[s.at] == '"' {
		return s.plainString()
	}
	start := s.at
	s.take('-')
	switch {
	case s.take('0'):
	case s.at < len(s.body) && s.body[s.at] >= '1' && s.body[s.at] <= '9':
		for s.at < len(s.body) && s.body[s.at] >= '0' && s.body[s.at] <= '9' {
			s.at++
		}
	default:
		return nil, false
	}
	// A fraction or exponent that follows is not a ',' or '}', so the
	// body is left to encoding/json.
	return s.body[start:s.at], true
}
