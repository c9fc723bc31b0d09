package httpapi

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// fakeListener fails Accept with errs, in order, then accepts.
type fakeListener struct {
	net.Listener
	errs []error
}

func (f *fakeListener) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	c, _ := net.Pipe()
	return c, nil
}

// Running out of descriptors is waited out; other errors are returned.
func TestSheddingListener(t *testing.T) {
	f := &fakeListener{errs: []error{
		&net.OpError{Op: "accept", Err: syscall.EMFILE},
		&net.OpError{Op: "accept", Err: syscall.ENFILE},
	}}
	sheds := 0
	c, err := sheddingListener{Listener: f, onShed: func(error) { sheds++ }}.Accept()
	if err != nil || c == nil || sheds != 2 {
		t.Fatalf("accept after exhaustion: %v %v, %d sheds", c, err, sheds)
	}
	c.Close()
	closed := errors.New("use of closed network connection")
	f.errs = []error{closed}
	if _, err := (sheddingListener{Listener: f}).Accept(); !errors.Is(err, closed) {
		t.Fatalf("a permanent error: %v", err)
	}
}
