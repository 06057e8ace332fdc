//go:build linux || darwin || freebsd

package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/native"
	"github.com/fips-go/fips/control/native/client"
)

// nativeOpts is a node with TUN off and the native API on at a socket in
// dir.
func nativeOpts(t *testing.T, dir, name string, l native.Limits) Options {
	t.Helper()
	return Options{NativeAPI: NativeAPIOptions{Enabled: true, Path: filepath.Join(dir, name+".sock"), Limits: l}}
}

func nativeFlows(t *testing.T, ln *loopNode) ctl.NativeFlowsJSON {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := ln.n.showNativeFlows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v.(ctl.NativeFlowsJSON)
}

// nativeLimitsOf is show_metrics' native_limits, freshly published.
func nativeLimitsOf(t *testing.T, ln *loopNode) ctl.NativeLimitsJSON {
	t.Helper()
	if _, err := ln.do(func(now time.Time) any { ln.n.publish(now); return nil }); err != nil {
		t.Fatal(err)
	}
	return MetricsOf(ln.n.Snapshot()).NativeLimits
}

// TestNativeAPIThroughRelay: two nodes with TUN off and a relay between
// them exchange datagrams by npub:port through the client package; the
// flows appear in show_native_flows; a flood of flows from one client is
// refused and counted, a flood of datagrams onto a client that does not
// read is dropped on that flow and counted, and other traffic still flows.
func TestNativeAPIThroughRelay(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	dir, err := os.MkdirTemp("", "fna")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l := native.Limits{PerFlow: 8, Backlog: 4, MaxFlows: 32, PerClient: 6}
	r := startLoopNode(t, Options{})
	a := startLoopNode(t, nativeOpts(t, dir, "a", l), r)
	b := startLoopNode(t, nativeOpts(t, dir, "b", l), r)
	sockA, sockB := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	keyA, keyB := a.n.Identity().PublicKey(), b.n.Identity().PublicKey()

	lis, err := client.Listen(sockB, 4242)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	if lis.Addr().Port != 4242 || lis.Addr().Key != keyB {
		t.Fatalf("listener at %v", lis.Addr())
	}
	peerB, err := client.ParseAddr(keyB.Npub() + ":4242")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := client.Dial(sockA, 0, peerB)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	if ca.LocalAddr().Key != keyA || ca.LocalAddr().Port < native.PortEphemeralMin || ca.MaxPayload() <= 0 {
		t.Fatalf("flow %v → %v, max %d", ca.LocalAddr(), ca.RemoteAddr(), ca.MaxPayload())
	}

	// The first datagrams wait for the session A–B (through R).
	accepted := make(chan *client.Conn, 1)
	go func() {
		lis.SetDeadline(time.Now().Add(30 * time.Second))
		c, err := lis.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			close(accepted)
			return
		}
		accepted <- c
	}()
	var cb *client.Conn
	for deadline := time.Now().Add(30 * time.Second); cb == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no flow arrived at B")
		}
		if err := ca.Send([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		select {
		case cb = <-accepted:
		case <-time.After(300 * time.Millisecond):
		}
	}
	if cb == nil {
		t.FailNow()
	}
	defer cb.Close()
	if cb.RemoteAddr() != ca.LocalAddr() || cb.LocalAddr() != peerB {
		t.Fatalf("accepted %v → %v, dialled %v → %v", cb.RemoteAddr(), cb.LocalAddr(), ca.LocalAddr(), peerB)
	}
	buf := make([]byte, 65535)
	cb.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := cb.Recv(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("B got %q, %v", buf[:n], err)
	}
	for cb.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); ; {
		if _, err := cb.Recv(buf); err != nil { // the other hellos
			break
		}
	}
	if err := cb.Send([]byte("hi, " + cb.RemoteAddr().Key.Npub())); err != nil {
		t.Fatal(err)
	}
	ca.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := ca.Recv(buf); err != nil || string(buf[:n]) != "hi, "+keyA.Npub() {
		t.Fatalf("A got %q, %v", buf[:n], err)
	}
	// An empty datagram is a datagram, not a close.
	if err := ca.Send(nil); err != nil {
		t.Fatal(err)
	}
	cb.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := cb.Recv(buf); err != nil || n != 0 {
		t.Fatalf("empty datagram: %d, %v", n, err)
	}
	if err := ca.Send(make([]byte, ca.MaxPayload()+1)); !errors.Is(err, syscall.EMSGSIZE) {
		t.Fatalf("oversize send: %v", err)
	}

	fa, fb := nativeFlows(t, a), nativeFlows(t, b)
	if len(fa.Flows) != 1 || fa.Flows[0].State != "established" || fa.Flows[0].Peer != keyB.Npub() ||
		fa.Flows[0].RemotePort != 4242 || fa.Flows[0].LocalPort != ca.LocalAddr().Port || fa.Stats.FlowsOpened != 1 ||
		fa.Stats.SentDatagrams == 0 || fa.Stats.ReceivedDatagrams != 1 {
		t.Errorf("A's flows: %+v", fa)
	}
	if len(fb.Listeners) != 1 || fb.Listeners[0].LocalPort != 4242 || len(fb.Flows) != 1 ||
		fb.Flows[0].Peer != keyA.Npub() || fb.Flows[0].State != "established" || fb.Stats.FlowsAccepted != 1 {
		t.Errorf("B's flows: %+v", fb)
	}

	// Setup errors carry upstream's errnos.
	if _, err := client.Listen(sockB, 4242); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second listen on 4242: %v", err)
	}
	if _, err := client.Listen(sockB, 256); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("listen on 256: %v", err)
	}

	// A flood of flows from one client: refused at its bound (6: one
	// flow held already) and counted; the node's other flows live on.
	var extra []*client.Conn
	defer func() {
		for _, c := range extra {
			c.Close()
		}
	}()
	var refused error
	for i := range 20 {
		c, err := client.Dial(sockA, 0, client.Addr{Key: keyB, Port: uint16(5000 + i)})
		if err != nil {
			refused = err
			break
		}
		extra = append(extra, c)
	}
	if !errors.Is(refused, syscall.EMFILE) || len(extra) != l.PerClient-1 {
		t.Fatalf("after %d extra flows: %v", len(extra), refused)
	}
	if got := nativeLimitsOf(t, a).RefusedClientLimit; got != 1 {
		t.Errorf("refused_client_limit %d", got)
	}
	for _, c := range extra {
		c.Close()
	}
	extra = nil
	if !waitFor(5*time.Second, func() bool { return len(nativeFlows(t, a).Flows) == 1 }) {
		t.Fatalf("closed flows not released: %+v", nativeFlows(t, a).Flows)
	}

	// A flood of datagrams onto B's client, which stops reading: it loses
	// its own datagrams (drop_flow_queue_full), while a second flow
	// between the same nodes still delivers.
	lis2, err := client.Listen(sockB, 4243)
	if err != nil {
		t.Fatal(err)
	}
	defer lis2.Close()
	ca2, err := client.Dial(sockA, 0, client.Addr{Key: keyB, Port: 4243})
	if err != nil {
		t.Fatal(err)
	}
	defer ca2.Close()
	var flooded atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := bytes.Repeat([]byte{0xaa}, 512)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ca.SetWriteDeadline(time.Now().Add(time.Second))
			if ca.Send(p) == nil {
				flooded.Add(1)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	if err := ca2.Send([]byte("through")); err != nil {
		t.Fatal(err)
	}
	lis2.SetDeadline(time.Now().Add(10 * time.Second))
	cb2, err := lis2.Accept()
	if err != nil {
		t.Fatalf("second flow during the flood: %v (flooded %d)", err, flooded.Load())
	}
	defer cb2.Close()
	// The flood shares the path (and the relay's queues) with this flow,
	// so some of its datagrams may be lost too; enough must arrive.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 100 {
			if ca2.Send([]byte(fmt.Sprintf("during flood %d", i))) != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	defer func() { <-sent }()
	got := 0
	cb2.SetReadDeadline(time.Now().Add(10 * time.Second))
	for got < 20 {
		n, err := cb2.Recv(buf)
		if err != nil {
			t.Fatalf("second flow got %d datagrams during the flood: %v", got, err)
		}
		if bytes.HasPrefix(buf[:n], []byte("during flood")) {
			got++
		}
	}
	t.Logf("flooded %d datagrams; the second flow delivered %d+", flooded.Load(), got)
	if !waitFor(10*time.Second, func() bool { return nativeFlows(t, b).Stats.DropFlowQueueFull > 0 }) {
		t.Errorf("flood not counted: %+v after %d datagrams", nativeFlows(t, b).Stats, flooded.Load())
	}
	for _, f := range nativeFlows(t, b).Flows {
		if f.Queued > l.PerFlow {
			t.Errorf("flow %d queues %d > %d", f.FlowID, f.Queued, l.PerFlow)
		}
	}
}
