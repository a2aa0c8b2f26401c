package specsync_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// proxy forwards TCP connections to an API server, so that a test can make
// that server unreachable for one client alone: while cut, every
// connection is closed and new ones are dropped at once, as with a hub
// behind a broken network.
type proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

// startProxy returns cfg with its API server behind a new proxy, and the
// proxy, which stops when the test ends.
func startProxy(t *testing.T, cfg *rest.Config) (*rest.Config, *proxy) {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // the serving certificate names 127.0.0.1
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: u.Host, ln: ln, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setCut(true)
	})
	proxied := rest.CopyConfig(cfg)
	proxied.Host = "https://" + ln.Addr().String()
	return proxied, p
}

// setCut cuts the connection to the API server (closing every open
// connection), or restores it.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // the test ended
		}
		go p.forward(in)
	}
}

// forward copies bytes both ways between in and a new connection to the
// API server, until either side closes or the proxy is cut.
func (p *proxy) forward(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	if !p.track(in, out) {
		_, _ = in.Close(), out.Close()
		return
	}
	go func() {
		_, _ = io.Copy(out, in)
		_ = out.Close()
	}()
	_, _ = io.Copy(in, out)
	_ = in.Close()
}

// track records the connections to close when cut; false means the proxy
// is cut already.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}
