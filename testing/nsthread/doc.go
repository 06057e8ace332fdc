// Package nsthread runs a test on a locked OS thread inside fresh network
// namespaces, for tests that build veth pairs and attach programs without
// touching the host's. It needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN).
//
// It builds on Linux only.
package nsthread
