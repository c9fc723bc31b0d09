package hostport

import (
	"fmt"
	"net"
	"testing"
)

// Listen takes what net.Listen takes (on loopback only: the tests bind
// nothing else) and refuses, before any bind, what
// net.Listen would refuse for its form; Dial also refuses port 0, which
// only a listen can use.
func TestListenAndDial(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:", "localhost:0"} {
		if err := Listen(addr); err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("net.Listen(%q), which Listen accepts: %v", addr, err)
			continue
		}
		ln.Close()
	}
	for addr, says := range map[string]string{
		"nonsense":         `"nonsense" is not host:port (missing port in address)`,
		"127.0.0.1:99999":  `"127.0.0.1:99999": the port must be a number 0..65535`,
		"127.0.0.1:-1":     `"127.0.0.1:-1": the port must be a number 0..65535`,
		"127.0.0.1:80x":    `"127.0.0.1:80x": the port must be a number 0..65535`,
		"::1:80":           `"::1:80" is not host:port (too many colons in address)`,
		"http://127.0.0.1": `"http://127.0.0.1": the port must be a number 0..65535`,
	} {
		if err := Listen(addr); err == nil || err.Error() != says {
			t.Errorf("Listen(%q): %v, want %q", addr, err, says)
		}
		if _, err := net.Listen("tcp", addr); err == nil {
			t.Errorf("net.Listen(%q), which Listen refuses, bound", addr)
		}
		if err := Dial(addr); err == nil {
			t.Errorf("Dial(%q) accepted", addr)
		}
	}
	for _, addr := range []string{"10.0.0.1:8080", "seckill-a.example:7070", "[::1]:1", ":8080"} {
		if err := Dial(addr); err != nil {
			t.Errorf("Dial(%q): %v", addr, err)
		}
	}
	for _, addr := range []string{"10.0.0.1:0", "10.0.0.1:", "10.0.0.1:65536"} {
		if err := Dial(addr); err == nil || err.Error() != fmt.Sprintf("%q: the port must be a number 1..65535", addr) {
			t.Errorf("Dial(%q): %v", addr, err)
		}
	}
}
