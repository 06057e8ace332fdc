// Package mmsg is the one recvmmsg/sendmmsg system call the Linux
// transports' batched I/O makes (dataplane/udp, dataplane/ethernet), on
// headers they preallocate, for a syscall.RawConn's Read or Write.
package mmsg
