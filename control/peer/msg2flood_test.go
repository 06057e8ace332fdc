package peer

import (
	"encoding/binary"
	"testing"
	"time"
)

// forgedMsg2 is what an on-path observer who saw a msg1 with sender index
// idx can send back: a msg2-shaped packet (built byte by byte) for that
// index, with a valid ephemeral point and random ciphertext. It costs the
// initiator a DH before it fails.
func forgedMsg2(n *simNet, idx uint32, point []byte) []byte {
	p := make([]byte, 69)
	for i := range p {
		p[i] = byte(n.rng.Uint32())
	}
	p[0], p[1] = 0x02, 0x00
	binary.LittleEndian.PutUint16(p[2:], 65)
	binary.LittleEndian.PutUint32(p[8:], idx) // receiver index: the leg's
	copy(p[12:], point)
	return p
}

// TestForgedMsg2FloodBoundedGenuineLinks is issue 27's item 11: a forged
// msg2 for a handshake leg an on-path observer saw cost two DHs, with no
// limit for the 30 s the leg lives. Now it costs one (msg2's "se" is
// msg1's es, kept), and each leg tries at most 8 at once and 1 a second
// after from each of its responder's address and everywhere else. The
// genuine msg2 still completes the handshake: at once when the flood
// comes from the observer's own address; when it spoofs the responder's,
// with the msg2 answering a msg1 resend once a token has refilled (here
// the simulated clock has both at 1 s; a flood spoofing the responder
// fast enough to take every token as it refills keeps the handshake
// waiting, as dropping its packets would).
func TestForgedMsg2FloodBoundedGenuineLinks(t *testing.T) {
	for _, spoof := range []bool{false, true} {
		name := map[bool]string{false: "own-address", true: "spoofing-responder"}[spoof]
		t.Run(name, func(t *testing.T) {
			n := newSimNet(t, 211)
			a, b := n.add(1, DefaultConfig()), n.add(2, DefaultConfig())
			if err := a.m.Dial(n.now, b.id.PublicKey(), a.candidate(b)); err != nil {
				t.Fatal(err)
			}
			// The observer sees msg1 on its way to b: the leg's index.
			msg1 := n.queue[0].data
			idx := binary.LittleEndian.Uint32(msg1[4:8])
			pt, err := b.id.PublicKey().Point()
			if err != nil {
				t.Fatal(err)
			}
			ep := pt.SerializeCompressed()
			from := simAddr(66)
			if spoof {
				from = b.addr
			}
			const flood = 1000
			for range flood {
				a.m.HandlePacket(n.now, 1, from, forgedMsg2(n, idx, ep))
			}
			s := a.m.Stats()
			if s.Msg2DecryptFailed != legMsg2Burst || s.Msg2LegLimited != flood-legMsg2Burst {
				t.Fatalf("DHs on forged msg2s %d (want %d), refused %d (want %d)",
					s.Msg2DecryptFailed, legMsg2Burst, s.Msg2LegLimited, flood-legMsg2Burst)
			}
			// The flood goes on at 100 a second while b answers.
			start := n.now
			for i := 0; a.m.Peer(b.id.NodeAddr()) == nil && i < 300; i++ {
				n.advance(10*time.Millisecond, 10*time.Millisecond)
				a.m.HandlePacket(n.now, 1, from, forgedMsg2(n, idx, ep))
			}
			n.deliver()
			linked(t, a, b)
			s = a.m.Stats()
			took := n.now.Sub(start)
			t.Logf("%s: linked after %v (simulated) of forged msg2s; %d DHs spent on them, %d refused before any DH",
				name, took, s.Msg2DecryptFailed, s.Msg2LegLimited)
			bound := legMsg2Burst + legMsg2Rate*int(took/time.Second+1)
			if int(s.Msg2DecryptFailed) > bound {
				t.Errorf("%d DHs on forged msg2s, want ≤ %d", s.Msg2DecryptFailed, bound)
			}
			if !spoof && took > 100*time.Millisecond {
				t.Errorf("genuine msg2 from the responder's address took %v", took)
			}
			if spoof && took > 3*time.Second {
				t.Errorf("genuine msg2 took %v under a spoofed flood", took)
			}
		})
	}
}
