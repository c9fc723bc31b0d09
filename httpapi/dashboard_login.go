package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/timefmt"

	"github.com/valyala/fasthttp"
)

// Dashboard login links: a way into the dashboard for a browser that
// cannot be given the admin token by typing it (a headless capture, a
// kiosk screen, a link in a runbook's step), which keeps the token out of
// every URL. An admin asks for a link (POST /admin/dashboard/login-links,
// with the admin token: seckillctl dashboard-link); the link holds a
// random code that works once, within DashboardLoginCodeTTL. Opening it
// (GET /admin/dashboard/login?code=...) sets the dashboard session
// cookie, HttpOnly and SameSite=Strict, and redirects to the dashboard,
// whose reads of /admin/stats and /admin/stats/stream the cookie
// authorizes (no other route: it is not the admin token). The cookie is
// the session's expiry signed with a key derived from the admin token
// (HMAC-SHA-256): it outlives a restart of the server, lasts
// DashboardSessionTTL at most, and changing the admin token ends every
// session.

const (
	// DashboardLoginCodeTTL is how long a login link works (once).
	DashboardLoginCodeTTL = time.Minute
	// DashboardSessionTTL is how long the session a login link opens
	// lasts.
	DashboardSessionTTL = 12 * time.Hour
	// dashboardCookie is the session cookie's name.
	dashboardCookie = "seckill_dashboard"
	// dashboardLoginPath is the route a login link opens.
	dashboardLoginPath = "/admin/dashboard/login"
	// maxLoginCodes bounds the codes waiting to be used; issuing one more
	// drops the one that expires first.
	maxLoginCodes = 64
	// reasonLoginLinkInvalid answers a code that was used, expired or
	// never issued.
	reasonLoginLinkInvalid = "LOGIN_LINK_INVALID"
)

// loginCodes are the unused codes of the login links, by SHA-256, with
// their expiry.
type loginCodes struct {
	mu    sync.Mutex
	codes map[[32]byte]time.Time
}

// issue makes a code that works once until now + DashboardLoginCodeTTL.
func (c *loginCodes) issue(now time.Time) (string, time.Time) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("httpapi: crypto/rand failed: " + err.Error()) // never on Linux (getrandom)
	}
	code := base64.RawURLEncoding.EncodeToString(raw[:])
	expires := now.Add(DashboardLoginCodeTTL)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.codes == nil {
		c.codes = map[[32]byte]time.Time{}
	}
	for k, at := range c.codes {
		if !now.Before(at) {
			delete(c.codes, k)
		}
	}
	if len(c.codes) >= maxLoginCodes {
		var first [32]byte
		var firstAt time.Time
		for k, at := range c.codes {
			if firstAt.IsZero() || at.Before(firstAt) {
				first, firstAt = k, at
			}
		}
		delete(c.codes, first)
	}
	c.codes[sha256.Sum256([]byte(code))] = expires
	return code, expires
}

// valid reports whether code would be spent by use at now, spending
// nothing (a HEAD of the login link).
func (c *loginCodes) valid(code []byte, now time.Time) bool {
	k := sha256.Sum256(code)
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.codes[k]
	return ok && now.Before(at)
}

// use spends code: true once, while it has not expired at now.
func (c *loginCodes) use(code []byte, now time.Time) bool {
	k := sha256.Sum256(code)
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.codes[k]
	delete(c.codes, k)
	return ok && now.Before(at)
}

// dashboardSessionKey derives the key that signs the session cookies from
// the admin token.
func dashboardSessionKey(adminToken string) [32]byte {
	m := hmac.New(sha256.New, []byte(adminToken))
	m.Write([]byte("seckill dashboard session v1"))
	var k [32]byte
	copy(k[:], m.Sum(nil))
	return k
}

// sessionMAC signs a session that ends at expiresUnix.
func (s *Server) sessionMAC(expiresUnix string) []byte {
	m := hmac.New(sha256.New, s.sessionKey[:])
	m.Write([]byte(expiresUnix))
	return m.Sum(nil)
}

// sessionCookieValue is the cookie of a session that ends at expires:
// "<Unix seconds>.<base64url HMAC>".
func (s *Server) sessionCookieValue(expires time.Time) string {
	at := strconv.FormatInt(expires.Unix(), 10)
	return at + "." + base64.RawURLEncoding.EncodeToString(s.sessionMAC(at))
}

// validSession reports whether cookie is a session this server signed that
// has not ended at now.
func (s *Server) validSession(cookie []byte, now time.Time) bool {
	at, mac, ok := bytes.Cut(cookie, []byte("."))
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(string(at), 10, 64)
	if err != nil || !now.Before(time.Unix(unix, 0)) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(string(mac))
	return err == nil && hmac.Equal(got, s.sessionMAC(string(at)))
}

// dashboardReader wraps a read of the dashboard's (/admin/stats and its
// stream): the admin bearer token, or, from a request that gives none, a
// valid dashboard session cookie.
func (s *Server) dashboardReader(h func(ctx *fasthttp.RequestCtx) string) func(ctx *fasthttp.RequestCtx) string {
	withToken := s.admin(h)
	return func(ctx *fasthttp.RequestCtx) string {
		if len(ctx.Request.Header.Peek("Authorization")) == 0 && s.validSession(ctx.Request.Header.Cookie(dashboardCookie), s.cfg.Clock()) {
			return h(ctx)
		}
		return withToken(ctx)
	}
}

// loginLinkBody is the answer of POST /admin/dashboard/login-links.
type loginLinkBody struct {
	// LoginURL is the link's path and query: open it on this server.
	LoginURL string `json:"login_url"`
	// ExpiresAt: the link works once, until then.
	ExpiresAt string `json:"expires_at"`
	// SessionSeconds is how long the session it opens lasts.
	SessionSeconds int64 `json:"session_seconds"`
}

// handleLoginLink is POST /admin/dashboard/login-links (admin token). Its
// body is optional and carries nothing (empty or {}), as the admin
// actions': a body with anything in it ({"ttl":"1h"}) is refused, so that
// no caller believes it chose the link's lifetime.
func (s *Server) handleLoginLink(ctx *fasthttp.RequestCtx) string {
	if err := decodeNoFields(ctx.PostBody()); err != nil {
		return write(ctx, bodyError(err))
	}
	code, expires := s.loginCodes.issue(s.cfg.Clock())
	ctx.Response.Header.Set("Cache-Control", "no-store")
	return write(ctx, jsonReply(fasthttp.StatusCreated, outcomeOK, loginLinkBody{
		LoginURL: dashboardLoginPath + "?code=" + code, ExpiresAt: timefmt.Millis(expires.UnixMilli()),
		SessionSeconds: int64(DashboardSessionTTL / time.Second)}))
}

// handleLogin is GET /admin/dashboard/login?code=...: a valid code is
// spent for a session cookie and a 303 to the dashboard; any other is 403
// LOGIN_LINK_INVALID. The cookie is Secure when the request came over
// TLS (here, or at a proxy that says so in X-Forwarded-Proto).
func (s *Server) handleLogin(ctx *fasthttp.RequestCtx) string {
	h := &ctx.Response.Header
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	now := s.cfg.Clock()
	// A HEAD (a link preview, a checker) answers as the GET would, without
	// spending the code or opening a session.
	head := ctx.IsHead()
	code := ctx.QueryArgs().Peek("code")
	if head && s.loginCodes.valid(code, now) {
		h.Set("Location", "/admin/dashboard")
		ctx.SetStatusCode(fasthttp.StatusSeeOther)
		return outcomeOK
	}
	if head || !s.loginCodes.use(code, now) {
		return write(ctx, errorReply(reasonLoginLinkInvalid,
			"this login link was used, has expired or was never issued (a link works once, within a minute): print a new one with seckillctl dashboard-link"))
	}
	var c fasthttp.Cookie
	c.SetKey(dashboardCookie)
	c.SetValue(s.sessionCookieValue(now.Add(DashboardSessionTTL)))
	c.SetPath("/admin/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	c.SetMaxAge(int(DashboardSessionTTL / time.Second))
	c.SetSecure(ctx.IsTLS() || bytes.EqualFold(ctx.Request.Header.Peek("X-Forwarded-Proto"), []byte("https")))
	h.SetCookie(&c)
	h.Set("Location", "/admin/dashboard")
	ctx.SetStatusCode(fasthttp.StatusSeeOther)
	return outcomeOK
}
