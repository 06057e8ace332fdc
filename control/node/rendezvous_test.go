package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/pion/stun/v3"
	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/rendezvous"
	"github.com/fips-go/fips/control/rendezvous/relaytest"
	"github.com/fips-go/fips/control/transport"
	"github.com/fips-go/fips/dataplane/udp"
)

// stunOnLoopback answers Binding Requests with the source address moved
// to 192.0.2.0/24 (127.0.0.x → 192.0.2.x), which the nodes' TestMapTarget
// maps back.
func stunOnLoopback(t *testing.T) (addr string, stop func()) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			m := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if m.Decode() != nil {
				continue
			}
			b := from.Addr().As4()
			resp, err := stun.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess,
				stun.XORMappedAddress{IP: net.IPv4(192, 0, 2, b[3]), Port: int(from.Port())})
			if err == nil {
				_, _ = c.WriteToUDPAddrPort(resp.Raw, from)
			}
		}
	}()
	return "stun:" + c.LocalAddr().String(), func() { c.Close(); wg.Wait() }
}

func docToLoopback(ap netip.AddrPort) netip.AddrPort {
	b := ap.Addr().As4()
	if b[0] == 192 && b[1] == 0 && b[2] == 2 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, b[3]}), ap.Port())
	}
	return ap
}

// rdvLab starts the in-process relay and the loopback STUN server, and
// makes two identities; stop ends the servers (defer it after goleak).
func rdvLab(t *testing.T) (relayURL, stunSrv string, ida, idb *identity.Identity, stop func()) {
	t.Helper()
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	stunSrv, stopSTUN := stunOnLoopback(t)
	ida, _ = identity.Generate(nil)
	idb, _ = identity.Generate(nil)
	return relay.URL, stunSrv, ida, idb, func() { stopSTUN(); relay.Close() }
}

// rdvTestNode is a node on loopback with Nostr rendezvous through relay
// and stunSrv, advertising its UDP transport as "nat"; o's Policy, Peers
// and open-discovery settings are kept, the rest filled in.
func rdvTestNode(t *testing.T, relay, stunSrv string, id *identity.Identity, o RendezvousOptions) *Node {
	t.Helper()
	return rdvTestNodeLog(t, relay, stunSrv, id, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// rdvTestNodeLog is rdvTestNode logging to log.
func rdvTestNodeLog(t *testing.T, relay, stunSrv string, id *identity.Identity, o RendezvousOptions, log *slog.Logger) *Node {
	t.Helper()
	return rdvTestNodeWith(t, relay, stunSrv, id, o, log, nil)
}

// rdvTestNodeWith is rdvTestNodeLog with more transports (ids 2, …);
// o.Advertised, when set, replaces the UDP "nat" advert.
func rdvTestNodeWith(t *testing.T, relay, stunSrv string, id *identity.Identity, o RendezvousOptions, log *slog.Logger,
	more []transport.Transport) *Node {
	t.Helper()
	uo := udp.Defaults()
	uo.BindAddr = "127.0.0.1:0"
	u, err := udp.New(1, "", uo, log)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rendezvous.New(rendezvous.Config{Identity: id, Advertise: true, AdvertRelays: []string{relay},
		DMRelays: []string{relay}, STUNServers: []string{stunSrv}, SignalTTL: 5 * time.Second,
		ReplayWindow: 300 * time.Second, AttemptTimeout: 3 * time.Second, PunchStartDelay: 100 * time.Millisecond,
		PunchInterval: 20 * time.Millisecond, PunchDuration: 2 * time.Second, AdvertTTL: time.Hour,
		AdvertRefresh: 30 * time.Minute, MaxIncomingOffers: 4, MaxOffersPerNpub: 2, AdvertCacheMax: 16, SeenSessionsMax: 16,
		Failure: rendezvous.FailurePolicy{StreakThreshold: 5, CooldownMs: 60_000, WarnIntervalMs: 60_000, MaxEntries: 16, MismatchCooldownMs: 86_400_000},
		Log:     log, TestMapTarget: docToLoopback})
	if err != nil {
		t.Fatal(err)
	}
	pc := peer.DefaultConfig()
	pc.RetryBase = 200 * time.Millisecond
	o.Service = svc
	if o.Advertised == nil {
		o.Advertised = []AdvertisedTransport{{Transport: 1, Kind: "udp"}}
	}
	o.Adopt = func(tid transport.ID, c *net.UDPConn) (transport.Transport, error) {
		return udp.Adopt(tid, rendezvous.TransportNameNAT, c, udp.Defaults(), log)
	}
	n, err := New(Options{Identity: id, Log: log, Transports: append([]transport.Transport{u}, more...), Peer: pc,
		TickInterval: 100 * time.Millisecond, Rendezvous: o})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two nodes that know each other only by npub (via_nostr) traverse
// through the in-process relay: the punched sockets become UDP
// transports, the link handshake runs over them, and the unused
// transport of the losing side is closed.
func TestRendezvousAdoptsPunchedPath(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	relayURL, stunSrv, ida, idb, stopLab := rdvLab(t)
	defer stopLab()
	var logA, logB lockedBuffer
	mk := func(id, other *identity.Identity, w *lockedBuffer) *Node {
		return rdvTestNodeLog(t, relayURL, stunSrv, id, RendezvousOptions{Policy: "configured_only",
			Peers: []NostrPeer{{PublicKey: other.PublicKey(), AutoReconnect: true}}},
			slog.New(logging.New(w, logging.Options{Level: slog.LevelDebug})))
	}
	a, b := mk(ida, idb, &logA), mk(idb, ida, &logB)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, n := range []*Node{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	linked := func(n *Node, other *identity.Identity) (string, bool) {
		s := n.Snapshot()
		for _, p := range s.Peers {
			if p.Npub == other.Npub() {
				for _, tv := range s.Transports {
					if tv.ID == p.TransportID {
						return tv.Name, true
					}
				}
			}
		}
		return "", false
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		na, okA := linked(a, idb)
		nb, okB := linked(b, ida)
		if okA && okB {
			if na != rendezvous.TransportNameNAT || nb != rendezvous.TransportNameNAT {
				t.Errorf("links run over %q and %q, want the adopted %q transports", na, nb, rendezvous.TransportNameNAT)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no link over a punched path: a %+v\nb %+v", a.Snapshot().Rendezvous, b.Snapshot().Rendezvous)
		}
		time.Sleep(20 * time.Millisecond)
	}
	va := a.Snapshot().Rendezvous
	if va == nil || len(va.Peers) != 1 || va.Peers[0].State != "linked" || len(va.Adopted) == 0 {
		t.Fatalf("a's rendezvous view %+v", va)
	}
	// Upstream's lines: the attempt (INFO) on the side that started one,
	// the STUN observation (DEBUG) on both.
	started := regexp.MustCompile(`(?m) INFO fips::nostr::driver: Started Nostr UDP NAT traversal attempt npub=npub1\w+$`)
	observed := regexp.MustCompile(`(?m) DEBUG fips::nostr::stun: STUN observation succeeded .*stun_server=stun:127\.0\.0\.1:\d+ reflexive=[0-9.]+:\d+$`)
	la, lb := logA.String(), logB.String()
	if !started.MatchString(la) && !started.MatchString(lb) {
		t.Errorf("neither side logged the traversal attempt:\n--- a ---\n%s\n--- b ---\n%s", la, lb)
	}
	if !observed.MatchString(la) || !observed.MatchString(lb) {
		t.Errorf("a STUN observation line is missing:\n--- a ---\n%s\n--- b ---\n%s", la, lb)
	}
	// Upstream's lifecycle lines: discovery on, and the punched socket
	// adopted (peer_npub, transport_id, local_addr) on both sides.
	enabled := regexp.MustCompile(`(?m) INFO fips::node::lifecycle: Nostr overlay discovery enabled `)
	adopted := regexp.MustCompile(`(?m) INFO fips::node::lifecycle: Adopted NAT traversal socket peer_npub=npub1\w+ transport_id=\d+ local_addr=[0-9.]+:\d+ `)
	for _, l := range []string{la, lb} {
		if !enabled.MatchString(l) || !adopted.MatchString(l) {
			t.Errorf("no discovery-enabled or adoption line:\n%s", l)
		}
	}
	// A frame of another FMP version on the traversal transport puts the
	// peer in the protocol-mismatch cooldown.
	var local string
	for _, tv := range a.Snapshot().Transports {
		if tv.Name == rendezvous.TransportNameNAT {
			local = tv.LocalAddr
		}
	}
	c, err := net.Dial("udp4", local)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0x70, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v := a.Snapshot().Rendezvous
		if v != nil && len(v.Peers) == 1 && v.Peers[0].CooldownUntilMs > uint64(time.Now().Add(time.Hour).UnixMilli()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no protocol-mismatch cooldown: %+v", v.Peers)
		}
	}
	mismatch := regexp.MustCompile(`(?m) WARN fips::node::dataplane::rx_loop: Nostr-discovered peer speaks a different FMP version; suppressing retraversal peer_npub=` +
		idb.Npub() + ` transport_id=\d+ peer_version=7 our_version=0 cooldown_secs=\d+$`)
	if !mismatch.MatchString(logA.String()) {
		t.Errorf("no protocol-mismatch line:\n%s", logA.String())
	}
}

// Policy open: a node configured with no peer at all finds another one by
// its advert in the open-discovery sweep, traverses and links; the peer
// shows in its view as an open-discovery retry until it links.
func TestRendezvousOpenDiscovery(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	relayURL, stunSrv, ida, idb, stopLab := rdvLab(t)
	defer stopLab()
	a := rdvTestNode(t, relayURL, stunSrv, ida, RendezvousOptions{Policy: "open", OpenMaxPending: 64,
		StartupSweepDelay: 5 * time.Second, StartupSweepMaxAge: time.Hour, AdvertTTL: time.Hour})
	b := rdvTestNode(t, relayURL, stunSrv, idb, RendezvousOptions{Policy: "configured_only"})
	defer runRdvNodes(t, a, b)()
	for deadline := time.Now().Add(20 * time.Second); !rdvLinked(a, idb) || !rdvLinked(b, ida); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("open discovery found no link: a %+v", a.Snapshot().Rendezvous)
		}
	}
	// Linked: the open retry is dropped on a following tick, and B is not
	// queued again while connected.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if v := a.Snapshot().Rendezvous; v != nil && len(v.Peers) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("open retry kept after linking: %+v", a.Snapshot().Rendezvous.Peers)
		}
	}
	// show_peers still reports b's traversal state (the clock skew a's
	// initiator measured), as upstream reports it for every peer.
	var found bool
	for _, p := range a.showPeers().Peers {
		if p.Npub == idb.Npub() {
			found = true
			if p.NostrTraversal.LastObservedSkewMs == nil || p.NostrTraversal.InCooldown {
				t.Errorf("b's nostr_traversal %+v", p.NostrTraversal)
			}
		}
	}
	if !found {
		t.Error("b not in show_peers")
	}
}

// runRdvNodes runs the nodes until the returned stop is called.
func runRdvNodes(t *testing.T, nodes ...*Node) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// rdvLinked reports whether n has a peer link to other.
func rdvLinked(n *Node, other *identity.Identity) bool {
	for _, p := range n.Snapshot().Peers {
		if p.Npub == other.Npub() {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer that nodes' goroutines can log to while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Issue 27 item 1's acceptance at the node level: 2,500 throwaway
// adverts (fresh keys, far expiries, built here by hand) on the relay,
// far more than the nodes' 16-entry advert caches, do not stop two
// via_nostr peers from linking.
func TestRendezvousLinksPastAdvertFlood(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	relay, err := relaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	exp := strconv.FormatInt(time.Now().Add(1000*time.Hour).Unix(), 10)
	for i := range 2500 {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		ev := nostr.Event{PubKey: pk, CreatedAt: nostr.Now(), Kind: rendezvous.AdvertKind,
			Tags:    nostr.Tags{{"d", "fips-overlay-v1"}, {"protocol", "fips-overlay-v1"}, {"version", "1"}, {"expiration", exp}},
			Content: fmt.Sprintf(`{"identifier":"fips-overlay-v1","version":1,"endpoints":[{"transport":"udp","addr":"9.9.%d.%d:2121"}]}`, i/250, i%250+1)}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		relay.Inject(&ev)
	}
	stunSrv, stopSTUN := stunOnLoopback(t)
	defer stopSTUN()
	ida, _ := identity.Generate(nil)
	idb, _ := identity.Generate(nil)
	mk := func(id, other *identity.Identity) *Node {
		return rdvTestNode(t, relay.URL, stunSrv, id, RendezvousOptions{Policy: "configured_only",
			Peers: []NostrPeer{{PublicKey: other.PublicKey(), AutoReconnect: true}}})
	}
	a, b := mk(ida, idb), mk(idb, ida)
	defer runRdvNodes(t, a, b)()
	for deadline := time.Now().Add(30 * time.Second); !rdvLinked(a, idb) || !rdvLinked(b, ida); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("via_nostr peers did not link past the flood: a %+v", a.Snapshot().Rendezvous.Stats)
		}
	}
	for _, n := range []*Node{a, b} {
		st := n.Snapshot().Rendezvous.Stats
		if st.AdvertCacheEntries > 16+2 || st.AdvertCacheEvicted+st.EventsDropped == 0 {
			t.Errorf("flood not bounded and counted: %+v", st)
		}
	}
}
