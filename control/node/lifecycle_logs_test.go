package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/control/wire"
	"github.com/fips-go/fips/dataplane/tun"
	"github.com/fips-go/fips/dataplane/udp"
)

// logNode is a node logging in upstream's layout to buf, with one UDP
// transport per bind address (ids 1, 2, …; the second and later named
// "t2", "t3", …).
func logNode(t *testing.T, buf *lockedBuffer, statics []StaticPeer, binds ...string) *Node {
	t.Helper()
	log := slog.New(logging.New(buf, logging.Options{Level: slog.LevelDebug}))
	var ts []transport.Transport
	for i, b := range binds {
		uo := udp.Defaults()
		uo.BindAddr = b
		name := ""
		if i > 0 {
			name = "t" + string(rune('1'+i))
		}
		u, err := udp.New(transport.ID(i+1), name, uo, log)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, u)
	}
	id, err := identity.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Identity: id, Log: log, Transports: ts, TickInterval: 10 * time.Millisecond,
		Peer: peer.DefaultConfig(), StaticPeers: statics})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// inOrder checks that each of lines occurs in out, one after the other.
func inOrder(t *testing.T, out string, lines ...string) {
	t.Helper()
	rest := out
	for _, l := range lines {
		i := strings.Index(rest, l)
		if i < 0 {
			t.Fatalf("no %q after the previous lines in:\n%s", l, out)
		}
		rest = rest[i+len(l):]
	}
}

// TestLifecycleLogs: upstream's start and shutdown lines. a with b as a
// configured peer starts ("Transports initialized count=1"), links, and
// on cancel logs "RX loop exited" (fips), "Node draining", "Sent
// disconnect notifications" with sent/total/reason, "Transport stopped"
// with transport_id and transport_type and "Node stopped", in that order;
// b logs "Peer sent disconnect notification" naming a with reason
// Shutdown.
func TestLifecycleLogs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var la, lb lockedBuffer
	b := logNode(t, &lb, nil, "127.0.0.1:0")
	stopB := run(t, b)
	defer stopB()
	a := logNode(t, &la, []StaticPeer{linkTo(t, b)}, "127.0.0.1:0")
	stopA := run(t, a)
	await(t, 10*time.Second, "a and b linked", func() bool {
		return len(a.Snapshot().Peers) == 1 && len(b.Snapshot().Peers) == 1
	})
	stopA()
	inOrder(t, la.String(),
		" INFO fips::node::lifecycle: Transports initialized count=1\n",
		" INFO fips::node::dataplane::rx_loop: RX event loop started\n",
		" INFO fips: RX loop exited\n",
		" INFO fips: FIPS shutting down\n",
		" INFO fips::node::lifecycle: Node draining state=draining\n",
		" INFO fips::node::lifecycle: Sent disconnect notifications sent=1 total=1 reason=Shutdown\n",
		" INFO fips::node::lifecycle: Transport stopped transport_id=1 transport_type=udp\n",
		" INFO fips::node::lifecycle: Node stopped state=stopped\n")
	aName := ShortNpub(a.Identity().Npub()) // how b names its peer a
	await(t, 10*time.Second, "b's disconnect line", func() bool {
		return strings.Contains(lb.String(), " INFO fips::node::dataplane::dispatch: Peer sent disconnect notification peer="+aName+" reason=Shutdown\n")
	})
}

// TestTransportStartFailureLogs: a transport that cannot bind is
// upstream's WARN "Transport failed to start" (transport_type, name,
// error); with another one up the node starts degraded ("Node started
// DEGRADED", degraded_children), with none it logs "Node start failed:"
// and Run fails.
func TestTransportStartFailureLogs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const bad = "192.0.2.1:0" // TEST-NET-1: not an address of this host
	var buf lockedBuffer
	n := logNode(t, &buf, nil, "127.0.0.1:0", bad)
	stop := runServing(t, n, StateDegraded)
	stop()
	out := buf.String()
	inOrder(t, out,
		" WARN fips::node::lifecycle: Transport failed to start transport_type=udp name=t2 error=",
		" INFO fips::node::lifecycle: Transports initialized count=1\n",
		" WARN fips::node::lifecycle: Node started DEGRADED: one or more configured optional children failed to start degraded_children=[udp/t2]\n")
	if strings.Contains(out, "Transport stopped transport_id=2") {
		t.Errorf("the transport that never started is reported stopped:\n%s", out)
	}

	var buf2 lockedBuffer
	only := logNode(t, &buf2, nil, bad)
	if err := only.Run(context.Background()); err == nil {
		t.Fatal("Run with no transport up succeeded")
	}
	inOrder(t, buf2.String(),
		" WARN fips::node::lifecycle: Transport failed to start transport_type=udp error=",
		" WARN fips::node::lifecycle: Node start failed: no operational transports came up; tearing down partially-started children\n")
	if strings.Contains(buf2.String(), "Transports initialized") {
		t.Errorf("Transports initialized with none up:\n%s", buf2.String())
	}
}

// TestTUNLifecycleLogs: an adapter that opens is upstream's "TUN device
// active:" block (name, address, mtu lines and the effective MTU) and,
// at shutdown, "Shutting down TUN interface name=…"; one that fails is
// WARN "Failed to initialize TUN, continuing without it" with the error.
func TestTUNLifecycleLogs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, fail := range []bool{false, true} {
		var buf lockedBuffer
		n := logNode(t, &buf, nil, "127.0.0.1:0")
		n.opts.TUN = TUNOptions{Enabled: true, Name: "fake0", MTU: 1280, Open: func(tun.Config) (*tun.Device, error) {
			if fail {
				return nil, errors.New("no such device")
			}
			return tun.NewDevice(&scriptedTUN{reads: make(chan []byte), closed: make(chan struct{})}, "fake0", 7, nil), nil
		}}
		want := StateRunning
		if fail {
			want = StateDegraded
		}
		stop := runServing(t, n, want)
		addr := n.Identity().IPv6().String()
		if fail {
			await(t, 5*time.Second, "the TUN failure line", func() bool {
				return strings.Contains(buf.String(), " WARN fips::node::lifecycle: Failed to initialize TUN, continuing without it error=no such device name=fake0\n")
			})
			stop()
			if strings.Contains(buf.String(), "Shutting down TUN interface") {
				t.Errorf("a TUN that never opened is shut down:\n%s", buf.String())
			}
			continue
		}
		await(t, 5*time.Second, "the TUN block", func() bool { return strings.Contains(buf.String(), "effective MTU:") })
		stop()
		inOrder(t, buf.String(),
			" INFO fips::node::lifecycle: TUN device active: name=fake0 address="+addr+" mtu=1280 route=fd00::/8\n",
			" INFO fips::node::lifecycle:      name: fake0\n",
			" INFO fips::node::lifecycle:   address: "+addr+"\n",
			" INFO fips::node::lifecycle:       mtu: 1280\n",
			fmt.Sprintf(" INFO fips::node::lifecycle: effective MTU: %d bytes\n", udp.Defaults().MTU-ipv6Overhead),
			" INFO fips::node::lifecycle: Shutting down TUN interface name=fake0\n",
			" INFO fips::node::lifecycle: Node stopped state=stopped\n")
	}
}

// runServing starts n, waits for it to reach state and returns its stop
// function.
func runServing(t *testing.T, n *Node, state State) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	await(t, 5*time.Second, "node "+string(state), func() bool { return n.State() == state })
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestPathMtuNotificationBelowFloorLogged: a session's PathMtuNotification
// under the actionable floor is upstream's WARN "PathMtuNotification
// reports a path MTU below the actionable floor; ignoring" (src,
// reported_mtu, floor) and leaves the path MTU alone; one above it logs
// nothing.
func TestPathMtuNotificationBelowFloorLogged(t *testing.T) {
	var buf lockedBuffer
	n := logNode(t, &buf, nil, "127.0.0.1:0")
	now := time.Now()
	remote := identity.NodeAddr{0x42}
	n.core.sessionUp(now, remote, true)
	for _, mtu := range []uint16{100, 1200} {
		var body [wire.PathMtuNotificationSize]byte
		if _, err := (wire.PathMtuNotification{PathMTU: mtu}).MarshalTo(body[:]); err != nil {
			t.Fatal(err)
		}
		n.core.sessionFrame(now, remote, session.Frame{Type: wire.SessionMsgPathMtuNotification, Body: body[:], Recorded: true})
	}
	want := fmt.Sprintf(" WARN fips::node::handlers::session: PathMtuNotification reports a path MTU below the actionable floor; ignoring src=%s reported_mtu=100 floor=%d\n",
		remote.ShortHex(), mmp.MinActionablePathMTU)
	if out := buf.String(); !strings.Contains(out, want) || strings.Count(out, "PathMtuNotification") != 1 {
		t.Errorf("want one %q in:\n%s", want, out)
	}
	if got := n.core.smmp[remote].link.PathMTU().Current(); got < mmp.MinActionablePathMTU {
		t.Errorf("path MTU %d after a sub-floor notification", got)
	}
}

// TestProbeStartedLogged: an admitted probe is upstream's INFO "Probe
// started" (fips::node::handlers::probe) with npub, probe_id, budget_ms.
func TestProbeStartedLogged(t *testing.T) {
	var buf lockedBuffer
	n := logNode(t, &buf, nil, "127.0.0.1:0")
	npub, pk := otherNpub(t)
	data, _, err := n.probeStart(time.Now(), npub, pk)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" INFO fips::node::handlers::probe: Probe started npub=%s probe_id=%d budget_ms=%d\n", npub, data["probe_id"], data["budget_ms"])
	if !strings.Contains(buf.String(), want) {
		t.Errorf("no %q in:\n%s", want, buf.String())
	}
}
