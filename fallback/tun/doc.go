// Package tun opens the IPv6 adapter where the Linux device in
// dataplane/tun is not available: a utun device on macOS (ifconfig and
// route, as upstream configures it) and a wintun adapter on Windows
// (netsh). The device it returns is read and written with dataplane/tun's
// Reader and Batch, the same as on Linux, one packet per call. On other
// systems Open reports that the adapter is not supported.
package tun
