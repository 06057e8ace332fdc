//go:build linux

package netns

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// pacedScript sends count UDP datagrams of size bytes to host:port at
// rate per second on an absolute schedule, and prints how many left.
const pacedScript = `
import socket, sys, time
host, port, count, rate, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
t0 = time.monotonic()
sent = 0
for i in range(count):
    d = t0 + i / rate - time.monotonic()
    if d > 0:
        time.sleep(d)
    s.sendto(i.to_bytes(4, "big") + bytes(size - 4), (host, port))
    sent += 1
print(sent)
`

// sinkScript binds [::]:port and discards what arrives.
const sinkScript = `
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::", int(sys.argv[1])))
while True:
    s.recv(65535)
`

// linkMMP is n's show_mmp link_layer for peer, with the ReceiverReport
// count behind it.
type linkMMP struct {
	LossRate float64 `json:"loss_rate"`
	Stats    struct {
		ReportsSeen uint64 `json:"reports_seen"`
	} `json:"stats"`
}

func mmpOf(t *testing.T, n, peer *Node) linkMMP {
	t.Helper()
	var r struct {
		Peers []struct {
			Peer      string  `json:"peer"`
			LinkLayer linkMMP `json:"link_layer"`
		} `json:"peers"`
	}
	if err := n.Call("show_mmp", nil, &r); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Peers {
		if p.Peer == peer.NodeAddr() {
			return p.LinkLayer
		}
	}
	t.Fatalf("%s's show_mmp has no peer %s", n.Name, peer.Name)
	return linkMMP{}
}

// TestEngineMMPLoss: MMP over a link whose frames B's engine worker
// opens. A paced UDP stream A→C (1000 datagrams a second over the mesh)
// transits B, whose worker authenticates A's frames and records them in
// the link's receiver state behind B's ReceiverReports; A's show_mmp
// link_layer loss_rate towards B — computed from those reports — is 0
// on the clean link, and 10% ± 2 points once a TC program drops every
// 10th FIPS datagram at B's ingress from A.
func TestEngineMMPLoss(t *testing.T) {
	m, a, b, c, _ := ipv6Chain(t, Options{})
	addr := resolve(t, m, a, c)
	waitReply(t, m, a, addr, 20*time.Second)
	if out, err := m.Exec("a", "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", addr); err != nil {
		t.Fatalf("ping6 A→C: %v\n%s", err, out)
	}
	var ab *Link
	for _, l := range m.Links() {
		if l.A == a && l.B == b {
			ab = l
		}
	}
	// Whole datagrams at B's ingress: A's UDP_SEGMENT runs are split
	// before they leave A's veth, so the dropper sees every frame.
	if out, err := m.Exec("a", "ethtool", "-K", ab.IfA, "tx-udp-segmentation", "off", "generic-segmentation-offload", "off"); err != nil {
		t.Fatalf("ethtool on %s: %v\n%s", ab.IfA, err, out)
	}
	defer m.Background("c", "python3", "-c", sinkScript, "7000")()

	// stream runs the paced stream for secs and reads A's link metrics
	// towards B at read seconds into it.
	stream := func(secs, read int) linkMMP {
		done := make(chan string, 1)
		go func() {
			out, err := m.Exec("a", "python3", "-c", pacedScript, addr, "7000", strconv.Itoa(secs*1000), "1000", "200")
			if err != nil {
				done <- fmt.Sprintf("paced sender: %v\n%s", err, out)
				return
			}
			done <- ""
		}()
		select {
		case msg := <-done:
			t.Fatalf("the stream ended early: %s", msg)
		case <-time.After(time.Duration(read) * time.Second):
		}
		v := mmpOf(t, a, b)
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
		return v
	}
	// show_status is the snapshot of the last tick when only workers
	// are busy: its engine counts lag by up to a second.
	e0 := engineOf(t, b)
	clean := stream(6, 5)
	e1 := engineOf(t, b)
	t.Logf("clean link: A's loss_rate towards B %.4f (%d reports); b's worker opened %d frames, forwarded %d",
		clean.LossRate, clean.Stats.ReportsSeen, e1.FramesOpened-e0.FramesOpened, e1.Forwarded-e0.Forwarded)
	if fw := e1.Forwarded - e0.Forwarded; fw < 4000 {
		t.Fatalf("b's worker forwarded %d datagrams of a 6000-datagram stream: not the engine's path", fw)
	}
	if clean.LossRate != 0 {
		t.Errorf("clean link: loss_rate %v, want 0", clean.LossRate)
	}

	d, err := m.DropEveryNth(b, ab.IfB, uint16(2121), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	lossy := stream(12, 10)
	ds, err := d.Stats()
	if err != nil {
		t.Fatal(err)
	}
	e2 := engineOf(t, b)
	t.Logf("lossy link: A's loss_rate towards B %.4f (%d reports); dropper saw %d, dropped %d (%.2f%%), %d GSO runs; b's worker opened %d frames, forwarded %d",
		lossy.LossRate, lossy.Stats.ReportsSeen, ds.Seen, ds.Dropped, 100*float64(ds.Dropped)/float64(max(ds.Seen, 1)), ds.GSO,
		e2.FramesOpened-e1.FramesOpened, e2.Forwarded-e1.Forwarded)
	if ds.Seen < 10000 || ds.GSO != 0 {
		t.Fatalf("the dropper saw %d single datagrams and %d GSO runs: the induced rate is not 10%%", ds.Seen, ds.GSO)
	}
	if lossy.LossRate < 0.08 || lossy.LossRate > 0.12 {
		t.Errorf("lossy link: loss_rate %.4f, want 0.10 ± 0.02", lossy.LossRate)
	}
	if lossy.Stats.ReportsSeen <= clean.Stats.ReportsSeen {
		t.Errorf("no ReceiverReport arrived during the lossy stream (%d then %d)", clean.Stats.ReportsSeen, lossy.Stats.ReportsSeen)
	}
}
