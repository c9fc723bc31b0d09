package etcdtest

import (
	"net"
	"sync"
)

// Proxy forwards TCP connections from its own address (on loopback) to a
// target, and can blackhole them: while cut, it keeps every socket open
// but forwards no byte in either direction (and holds new connections
// unanswered), which is how a network partition looks to both ends.
// Resuming lets the held bytes through.
type Proxy struct {
	// Addr is the proxy's listening address, host:port.
	Addr string
	ln   net.Listener

	mu     sync.Mutex
	target string
	cut    bool
	only   direction     // the one direction a cut holds (0: both)
	resume chan struct{} // closed when a cut ends
	conns  map[net.Conn]struct{}
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) { return NewProxyAt("127.0.0.1:0", target) }

// NewProxyAt is NewProxy listening on addr (host:port; port 0: a free
// one), for a client that cannot reach the host's loopback (one in a
// network namespace of its own).
func NewProxyAt(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, resume: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.resume)
	go p.accept()
	return p, nil
}

// Retarget makes new connections go to target (a server restarted on a
// port the OS gave it); connections open now keep theirs.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// direction is which way bytes travel through the proxy.
type direction int

const (
	requests direction = iota + 1 // from the client to the target
	replies                       // from the target to the client
)

// Cut starts blackholing both directions.
func (p *Proxy) Cut() { p.startCut(0) }

// CutReplies starts blackholing the target's replies only: requests still
// reach it, so a write can commit while its caller hears nothing, the
// "timed out, outcome unknown" case.
func (p *Proxy) CutReplies() { p.startCut(replies) }

// CutRequests starts blackholing the client's bytes only: the target's
// still reach the client (a replication standby's acknowledgements held
// back while it receives).
func (p *Proxy) CutRequests() { p.startCut(requests) }

func (p *Proxy) startCut(only direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.cut, p.resume = true, make(chan struct{})
	}
	p.only = only
}

// Reset closes every connection open now, so both ends see it end; new
// ones are served as usual (held while cut).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Heal ends a cut.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		p.cut = false
		close(p.resume)
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Heal()
	p.Reset()
}

// gate blocks while the proxy is cut for traffic in direction d.
func (p *Proxy) gate(d direction) {
	p.mu.Lock()
	ch, cut, only := p.resume, p.cut, p.only
	p.mu.Unlock()
	if cut && (only == 0 || only == d) {
		<-ch
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(in)
	}
}

func (p *Proxy) serve(in net.Conn) {
	p.gate(requests)
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	out, err := net.Dial("tcp", target)
	if err != nil {
		in.Close()
		return
	}
	p.track(in, true)
	p.track(out, true)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(out, in, requests) }()
	go func() { defer wg.Done(); p.pipe(in, out, replies) }()
	wg.Wait()
	p.track(in, false)
	p.track(out, false)
}

// pipe copies src to dst, holding each chunk while the proxy is cut for
// that direction; it closes both at the first error or EOF.
func (p *Proxy) pipe(dst, src net.Conn, d direction) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate(d)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
