package httpapi

import "github.com/seckill/seckill/paysig"

// signatureOK checks X-Signature against the raw body (package paysig).
// With no payment secret configured every callback passes (main warns at
// start).
func (s *Server) signatureOK(body, header []byte) bool {
	return len(s.cfg.PaymentSecret) == 0 || paysig.Verify(s.cfg.PaymentSecret, body, header)
}
