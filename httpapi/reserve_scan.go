package httpapi

import (
	"unsafe"

	"github.com/valyala/fastjson"
)

// The reserve body almost always has one shape: an object of two or three
// plain strings, {"request_id":"…","user_id":"…"}. scanReserveBody reads
// that shape in one pass, without a parser from the pool; any other body
// (an escape, a number, an unknown or repeated key, a missing id, an
// error) is left to parseReserveBody, which decides it and words its
// errors. So the scan only ever agrees with the parser
// (TestScanReserveBodyAgreesWithParser), and the flood of a sold-out SKU
// costs no parse.

// reserveDecoder decodes one reserve body: by scanning, else with a parser
// from reserveParsers, which release returns. A body's entry pass is a view
// into the body or the parser's buffer, valid until release. With views
// set, a scanned body's ids are views into the body too (viewed reports
// it): valid while the body is, so only until the request's handler
// returns, and to be owned (doorPassed.own) before anything keeps them.
type reserveDecoder struct {
	p      *fastjson.Parser
	views  bool
	viewed bool
}

// decode decodes body as parseReserveBody does.
func (d *reserveDecoder) decode(body []byte) (reserveRequest, error) {
	if req, ok := scanReserveBody(body, d.views); ok {
		d.viewed = d.views
		return req, nil
	}
	if d.p == nil {
		d.p = reserveParsers.Get()
	}
	return parseReserveBody(d.p, body)
}

// release returns the parser, if decode took one.
func (d *reserveDecoder) release() {
	if d.p != nil {
		reserveParsers.Put(d.p)
		d.p = nil
	}
}

// scanReserveBody decodes body when it is a JSON object of the keys
// request_id, user_id and entry_pass, each at most once, whose values are
// strings of printable ASCII without escapes, between JSON whitespace, with
// user_id and at least one of request_id and entry_pass (non-empty) given;
// ok is false for any other body. The two ids are one allocation, a copy
// of the span of the body that holds both, cut into two strings; with
// views, none: they are views into body.
func scanReserveBody(body []byte, views bool) (req reserveRequest, ok bool) {
	var spans [3][2]int // request_id, user_id, entry_pass: value start, end
	var seen [3]bool
	i := skipJSONSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return req, false
	}
	i = skipJSONSpace(body, i+1)
	for {
		f, next := scanKey(body, i)
		if f < 0 {
			return req, false
		}
		if seen[f] {
			return req, false
		}
		seen[f] = true
		i = skipJSONSpace(body, next)
		if i == len(body) || body[i] != ':' {
			return req, false
		}
		vs, ve, next, ok := scanPlainString(body, skipJSONSpace(body, i+1))
		if !ok {
			return req, false
		}
		spans[f] = [2]int{vs, ve}
		i = skipJSONSpace(body, next)
		if i == len(body) {
			return req, false
		}
		if body[i] == ',' {
			i = skipJSONSpace(body, i+1)
			continue
		}
		if body[i] != '}' {
			return req, false
		}
		break
	}
	if skipJSONSpace(body, i+1) != len(body) {
		return req, false
	}
	pass := body[spans[2][0]:spans[2][1]]
	if !seen[1] || !seen[0] && len(pass) == 0 {
		return req, false // a missing field: the parser words it
	}
	if len(pass) > 0 {
		req.EntryPass = pass
	}
	lo, hi := spans[1][0], spans[1][1]
	if seen[0] {
		lo, hi = min(lo, spans[0][0]), max(hi, spans[0][1])
	}
	both := ""
	if views && hi > lo {
		both = unsafe.String(&body[lo], hi-lo)
	} else if hi > lo {
		both = string(body[lo:hi])
	}
	req.UserID = both[spans[1][0]-lo : spans[1][1]-lo]
	if seen[0] {
		req.RequestID = both[spans[0][0]-lo : spans[0][1]-lo]
	}
	return req, true
}

// reserveKeys are the keys of a reserve body, each with its quotes, in
// the order of scanReserveBody's fields.
var reserveKeys = [3]string{`"request_id"`, `"user_id"`, `"entry_pass"`}

// scanKey reads the key at body[i]: the field it names (its index in
// reserveKeys) and next, the index after its closing quote; f is -1 for
// anything but one of the three keys, written plainly. A key is told by
// its first letter and compared whole, not scanned byte by byte first:
// the bytes of a known key are plain.
func scanKey(body []byte, i int) (f, next int) {
	if i+1 >= len(body) || body[i] != '"' {
		return -1, 0
	}
	switch body[i+1] {
	case 'r':
		f = 0
	case 'u':
		f = 1
	case 'e':
		f = 2
	default:
		return -1, 0
	}
	k := reserveKeys[f]
	if rest := body[i:]; len(rest) < len(k) || string(rest[:len(k)]) != k {
		return -1, 0
	}
	return f, i + len(k)
}

// scanPlainString reads the JSON string at body[i]: its content is
// body[start:end], next the index after its closing quote. ok is false
// unless it is one with no escape and only printable ASCII.
func scanPlainString(body []byte, i int) (start, end, next int, ok bool) {
	if i >= len(body) || body[i] != '"' {
		return 0, 0, 0, false
	}
	j := i + 1
	for j < len(body) && plainStringByte[body[j]] {
		j++
	}
	if j == len(body) || body[j] != '"' {
		return 0, 0, 0, false
	}
	return i + 1, j, j + 1, true
}

// plainStringByte tells the bytes scanPlainString takes inside a string:
// printable ASCII but the quote and the backslash.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(body []byte, i int) int {
	for i < len(body) && body[i] <= ' ' && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i
}

// own makes in's ids (views into the request's body, reserveDecoder) its
// own copies: from here on a flight, the answer cache or the engine may
// keep them past the request.
func (in *doorPassed) own() {
	if in.views {
		// One allocation for both, as scanReserveBody's copy without views.
		u, r := in.userID, in.pass.requestID
		b := make([]byte, len(u)+len(r))
		copy(b[copy(b, u):], r)
		both := unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
		in.userID, in.pass.requestID = both[:len(u)], both[len(u):]
		in.views = false
	}
}
