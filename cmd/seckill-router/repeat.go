package main

import (
	"errors"
	"io"
	"syscall"

	"github.com/valyala/fasthttp"
)

// A reserve names its request_id, and seckill gives one request_id one
// result: sent again, a reserve that was accepted answers its reservation,
// never a second one (on a replica set's next primary too: what the old
// one acknowledged its standby holds). So a reserve to a replica set whose
// connection closed before any answer (its primary killed or demoted with
// the request on the wire, as a failover begins) is sent again like one
// that was not delivered, to the set's next primary within --timeout
// (failover.go): the repeat a buyer would make on the 504, made by the
// router. A timeout is not repeated (the cell may still be deciding it,
// and the time is spent), nor is any other command, nor a reserve whose
// request_id its entry pass gives (the router does not read passes); each
// keeps its 504 RESULT_UNKNOWN.

// repeatable reports whether req, which failed with err, may be sent
// again: a reserve naming its request_id whose connection was closed or
// reset before an answer.
func repeatable(req *fasthttp.Request, err error) bool {
	if !cutOff(err) || !req.Header.IsPost() {
		return false
	}
	_, _, _, ok := reserveOf(string(req.URI().Path()), req.Body())
	return ok
}

// cutOff reports whether err is a connection closed or reset by the other
// end before an answer, not a timeout.
func cutOff(err error) bool {
	return errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
