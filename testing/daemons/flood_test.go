//go:build unix

package daemons

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/fips-go/fips/control/wire"
)

type status struct {
	State     string            `json:"state"`
	PeerCount int               `json:"peer_count"`
	PID       int               `json:"pid"`
	LinkLayer map[string]uint64 `json:"link_layer"`
}

// TestFloodVisibleThroughControlSocket throws 10,000 random datagrams and
// 10,000 well-formed but unauthenticated msg1 packets at a daemon with an
// established link: the link stays up, heartbeats keep flowing, memory
// stays bounded, and show_status counts the refusals.
func TestFloodVisibleThroughControlSocket(t *testing.T) {
	a, b, pb := linkedPair(t)
	var before status
	if err := b.Call("show_status", nil, &before); err != nil {
		t.Fatal(err)
	}
	rssBefore := rssKiB(t, before.PID)

	conn, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", pb))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var points [][]byte
	for range 64 {
		k, _ := secp256k1.GeneratePrivateKey()
		points = append(points, k.PubKey().SerializeCompressed())
	}
	const each = 10_000
	buf := make([]byte, 1400)
	for i := range each {
		n := 1 + int(binary.LittleEndian.Uint16(randBytes(2)))%len(buf)
		rand.Read(buf[:n])
		conn.Write(buf[:n])
		m := randBytes(wire.FMPMsg1Size)
		m[0], m[1] = 0x01, 0x00
		binary.LittleEndian.PutUint16(m[2:], wire.FMPMsg1PayloadLen)
		copy(m[8:], points[i%len(points)])
		conn.Write(m)
		if i%500 == 0 {
			time.Sleep(5 * time.Millisecond) // let a 2-core machine keep up rather than overflow socket buffers
		}
	}
	// Wait until the daemon has counted what reached it, then check.
	var after status
	WaitFor(10*time.Second, func() bool {
		b.Call("show_status", nil, &after)
		return refusedMsg1(after)-refusedMsg1(before) >= each*9/10
	})
	hb := after.LinkLayer["heartbeats_received"]
	if _, ok := WaitFor(15*time.Second, func() bool {
		b.Call("show_status", nil, &after)
		return after.LinkLayer["heartbeats_received"] > hb
	}); !ok {
		t.Errorf("no heartbeat arrived after the flood")
	}
	if !b.HasPeer(npubA) || !a.HasPeer(npubB) {
		t.Fatalf("link lost during the flood\n%s", b.Logs())
	}
	var tr struct {
		Transports []struct {
			Stats map[string]uint64 `json:"stats"`
		} `json:"transports"`
	}
	if err := b.Call("show_transports", nil, &tr); err != nil || len(tr.Transports) != 1 {
		t.Fatalf("show_transports: %v", err)
	}
	ts := tr.Transports[0].Stats
	got := refusedMsg1(after) - refusedMsg1(before)
	junk := after.LinkLayer["drop_malformed"] + after.LinkLayer["drop_unknown_index"] + after.LinkLayer["msg2_unmatched"] -
		before.LinkLayer["drop_malformed"] - before.LinkLayer["drop_unknown_index"] - before.LinkLayer["msg2_unmatched"]
	t.Logf("msg1 refused %d of %d (rate limited %d, decrypt failed %d); junk counted %d of %d",
		got, each, after.LinkLayer["msg1_rate_limited"]-before.LinkLayer["msg1_rate_limited"],
		after.LinkLayer["msg1_decrypt_failed"]-before.LinkLayer["msg1_decrypt_failed"], junk, each)
	// Every datagram is accounted for: refused by the link layer, or
	// dropped and counted by the transport (kernel receive overflow, node
	// queue full, invalid/oversize).
	accounted := got + junk + ts["kernel_drops"] + ts["dropped_queue_full"] + ts["dropped_invalid"]
	t.Logf("transport: kernel_drops %d, dropped_queue_full %d, dropped_invalid %d; accounted %d of %d",
		ts["kernel_drops"], ts["dropped_queue_full"], ts["dropped_invalid"], accounted, 2*each)
	if accounted < 2*each-100 {
		t.Errorf("only %d of %d flood datagrams accounted for", accounted, 2*each)
	}
	if got < each/2 {
		t.Errorf("only %d of %d msg1 refusals counted", got, each)
	}
	if after.LinkLayer["msg1_rate_limited"] == before.LinkLayer["msg1_rate_limited"] {
		t.Error("rate limiter never engaged")
	}
	if after.PeerCount != 1 {
		t.Errorf("peer count %d", after.PeerCount)
	}
	if rss := rssKiB(t, after.PID); rss > rssBefore+64*1024 {
		t.Errorf("RSS grew from %d KiB to %d KiB", rssBefore, rss)
	}
}

func refusedMsg1(s status) uint64 {
	return s.LinkLayer["msg1_rate_limited"] + s.LinkLayer["msg1_decrypt_failed"] + s.LinkLayer["msg1_duplicate"]
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func rssKiB(t *testing.T, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("no /proc: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
	}
	return 0
}
