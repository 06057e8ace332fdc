//go:build linux

package tcp

import (
	"errors"
	"testing"

	"github.com/fips-go/fips/control/transport"
)

// On loopback the MSS (about 65483) is below the largest MTU, so the
// connection's link MTU comes from TCP_MAXSEG and bounds Send.
func TestLinkMTUFromMSS(t *testing.T) {
	o := listening()
	o.MTU = MaxMTU
	a := newNode(t, 1, o, nil)
	b := newNode(t, 2, o, nil)
	if got := a.LinkMTU(b.addr(t)); got != MaxMTU {
		t.Fatalf("before connecting: %d", got)
	}
	if err := a.Send(b.addr(t), msg1(t, 1)); err != nil {
		t.Fatal(err)
	}
	b.in.Next(t)
	link := a.LinkMTU(b.addr(t))
	if link >= MaxMTU || link < MinMTU {
		t.Fatalf("link MTU %d", link)
	}
	err := a.Send(b.addr(t), frame(t, 1, link+1-32))
	var me *transport.MTUError
	if !errors.As(err, &me) || me.MTU != link {
		t.Fatalf("send over the link MTU: %v", err)
	}
	if err := a.Send(b.addr(t), frame(t, 2, link-32)); err != nil {
		t.Fatal(err)
	}
	if got := b.in.Next(t); len(got.Data) != link {
		t.Fatalf("got %d bytes", len(got.Data))
	}
}
