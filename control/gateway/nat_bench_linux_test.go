package gateway

import (
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// inFreshNetns moves the calling goroutine's thread into a new network
// namespace, never to leave it: the thread ends with the goroutine and
// the namespace, with every nftables table made in it, goes with it.
func inFreshNetns() error {
	runtime.LockOSThread()
	return unix.Unshare(unix.CLONE_NEWNET)
}

// natWith is a NAT holding n mappings fd01::1.. → fd12::1...
func natWith(n int) (*NAT, error) {
	nat, err := NewNAT("lan0", quiet())
	if err != nil {
		return nil, err
	}
	for i := range n {
		if err := nat.AddMapping(poolAddr(0xfd01, i+1), poolAddr(0xfd12, i+1)); err != nil {
			return nil, err
		}
	}
	return nat, nil
}

func poolAddr(prefix uint16, i int) netip.Addr {
	var b [16]byte
	b[0], b[1] = byte(prefix>>8), byte(prefix)
	b[13], b[14], b[15] = byte(i>>16), byte(i>>8), byte(i)
	return netip.AddrFrom16(b)
}

// BenchmarkNATAddMapping: adding (and removing again) one mapping while
// 100 or 1,000 are installed, as a DNS answer for a new name costs.
func BenchmarkNATAddMapping(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchAddMapping(b, n) })
	}
}

func benchAddMapping(b *testing.B, installed int) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for a network namespace")
	}
	done := make(chan error)
	go func() {
		if err := inFreshNetns(); err != nil {
			done <- err
			return
		}
		nat, err := natWith(installed)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = nat.Cleanup() }()
		v, m := poolAddr(0xfd01, 5000), poolAddr(0xfd12, 5000)
		b.ResetTimer()
		for range b.N {
			if err := nat.AddMapping(v, m); err != nil {
				done <- err
				return
			}
			if err := nat.RemoveMapping(v); err != nil {
				done <- err
				return
			}
		}
		b.StopTimer()
		done <- nil
	}()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
