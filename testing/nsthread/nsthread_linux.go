package nsthread

import (
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// Lock locks the calling goroutine to its OS thread for the rest of the
// test; at cleanup the thread returns to its namespace of now and is
// unlocked (or stays locked if it cannot return, so the runtime retires it).
func Lock(t testing.TB) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("current netns: %v", err)
	}
	t.Cleanup(func() {
		if err := netns.Set(orig); err != nil {
			t.Errorf("restore netns: %v", err)
			return // leave the thread locked: it is in the wrong namespace
		}
		orig.Close()
		runtime.UnlockOSThread()
	})
}

// New creates a network namespace and moves the locked thread (Lock
// first) into it; the handle is closed at cleanup, and the namespace goes
// away with its last reference.
func New(t testing.TB) netns.NsHandle {
	t.Helper()
	ns, err := netns.New()
	if err != nil {
		t.Fatalf("new netns (needs root): %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}
