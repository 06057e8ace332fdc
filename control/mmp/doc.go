// Package mmp is the Metrics Measurement Protocol of a FIPS node, for links
// (FMP peers) and end-to-end sessions (FSP), as a pure clock-driven state
// machine: per-frame sender and receiver accounting, SenderReport and
// ReceiverReport building on RTT-adaptive intervals, the metrics derived from
// an incoming ReceiverReport (SRTT from the timestamp echo, forward and
// reverse delivery, loss, ETX, goodput, jitter, dual-EWMA trends), the link
// cost and congestion predicates that routing and ECN consult, the spin bit,
// the session send-failure backoff, and session path-MTU tracking
// (PathMtuNotification cadence at the destination, decrease-now /
// increase-after-confirmation at the source). It follows upstream's
// src/proto/mmp plus the interval and reverse-delivery steps of
// src/node/handlers/{mmp,session}.rs.
//
// Nothing here reads a clock, sleeps or starts goroutines: every method takes
// the current time, so a simulated clock replays it exactly. A Link is owned
// by one goroutine (the node's event loop); it is not safe for concurrent use.
//
// The package owns only MMP state. It must not touch what the node owns: it
// does not send or encode frames (control/wire has the report codecs and the
// node sends), it does not run the spanning tree (HandleReceiverReport only
// says when the first RTT arrived, which the node turns into a parent
// re-evaluation), it does not reap dead peers (LastRecv gives the node the
// liveness input), and it does not keep the node's path-MTU clamp map or the
// transport drop flags that also feed ECN.
package mmp
