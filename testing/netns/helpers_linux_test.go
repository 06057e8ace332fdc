//go:build linux

package netns

// The tests' names for the helpers apps_linux.go exports.
var (
	waitReply = WaitReply
	resolve   = Resolve
	iperf     = Iperf
)
