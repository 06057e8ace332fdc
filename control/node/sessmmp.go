package node

import (
	"slices"
	"time"

	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/logging"
	"github.com/fips-go/fips/control/mmp"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/wire"
)

// sessionMetrics is the session-layer MMP of one established session:
// ReceiverReports both ways give the end-to-end RTT and loss, and the
// destination side reports the forward path MTU (PathMtuNotification).
// SenderReports are not sent: the session table reports received frames
// only, and upstream's receivers ignore SR content anyway.
type sessionMetrics struct {
	link *mmp.Link
	// v1: an XX session (upstream next's), whose reports have next's
	// layout (docs/next.md §6.3).
	v1 bool
}

func (c *Core) sessionUp(now time.Time, remote identity.NodeAddr, initiator bool) {
	l := mmp.NewLink(now, c.opts.SessionMMP, true)
	l.SetEpoch(now)
	in, _ := c.sess.Session(remote)
	v1 := in.Pattern == session.PatternXX
	if v1 {
		l.SetV1() // next's MMP: no spin bit
	} else {
		l.SetInitiator(initiator)
	}
	c.smmp[remote] = &sessionMetrics{link: l, v1: v1}
}

func (c *Core) sessionFrame(now time.Time, src identity.NodeAddr, f session.Frame) {
	sm := c.smmp[src]
	if sm == nil {
		return
	}
	if !f.Recorded {
		sm.link.RecordRecv(now, f.Counter, f.Timestamp, f.Size, f.CE)
	}
	switch f.Type {
	case wire.SessionMsgReceiverReport:
		if err := c.handleSessionRR(now, sm, f.Body); err == nil {
			if srtt, ok := sm.link.SRTT(); ok {
				sm.link.PathMTU().UpdateInterval(srtt)
			}
		}
	case wire.SessionMsgPathMtuNotification:
		if n, err := wire.ParsePathMtuNotification(f.Body); err == nil {
			if n.PathMTU < mmp.MinActionablePathMTU {
				c.sessLog.Warn("PathMtuNotification reports a path MTU below the actionable floor; ignoring",
					"src", logging.Named(c.displayName, src), "reported_mtu", n.PathMTU, "floor", mmp.MinActionablePathMTU)
			}
			sm.link.PathMTU().ApplyNotification(now, n.PathMTU)
		}
	}
}

// handleSessionRR reads a SessionReceiverReport body in the session's
// layout.
func (c *Core) handleSessionRR(now time.Time, sm *sessionMetrics, body []byte) error {
	if sm.v1 {
		r, err := wire.ParseSessionReceiverReportV1(body)
		if err == nil {
			sm.link.HandleReceiverReportV1(now, r)
		}
		return err
	}
	r, err := wire.ParseSessionReceiverReport(body)
	if err == nil {
		sm.link.HandleReceiverReport(now, r.ReceiverReport)
	}
	return err
}

// sessionRR writes the session's ReceiverReport body for the interval
// in its layout; n is 0 when there is none to send.
func sessionRR(now time.Time, sm *sessionMetrics, body []byte) (n int, err error) {
	if sm.v1 {
		if r, ok := sm.link.BuildReceiverReportV1(now); ok {
			return r.MarshalSessionTo(body)
		}
		return 0, nil
	}
	if r, ok := sm.link.BuildReceiverReport(now); ok {
		return (wire.SessionReceiverReport{ReceiverReport: r}).MarshalTo(body)
	}
	return 0, nil
}

// observePathMTU records the forward-path MTU a datagram from src saw.
func (c *Core) observePathMTU(src identity.NodeAddr, mtu uint16) {
	if sm := c.smmp[src]; sm != nil && mtu != 0 {
		sm.link.PathMTU().Observe(mtu)
	}
}

// sessionReports sends the session reports and notifications that are due.
func (c *Core) sessionReports(now time.Time) {
	keys := c.smmpKeys[:0]
	for k := range c.smmp {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, identity.NodeAddr.Compare)
	c.smmpKeys = keys
	for _, dest := range keys {
		sm := c.smmp[dest]
		if sm.link.LogDue(now) {
			sm.link.MarkLogged(now)
			args := []any{"session", logging.Named(c.displayName, dest)}
			for _, a := range sm.link.SessionLogAttrs() {
				args = append(args, a)
			}
			c.sessLog.Debug("MMP session metrics", args...)
		}
		if _, rr := sm.link.Due(now); rr {
			var body [wire.SessionReceiverReportSize]byte
			if n, err := sessionRR(now, sm, body[:]); err == nil && n > 0 {
				c.sessionSend(now, sm, dest, wire.SessionMsgReceiverReport, body[:n])
			}
		}
		if p := sm.link.PathMTU(); p.NotificationDue(now) {
			if mtu, ok := p.BuildNotification(now); ok {
				var b [wire.PathMtuNotificationSize]byte
				if _, err := (wire.PathMtuNotification{PathMTU: mtu}).MarshalTo(b[:]); err == nil {
					c.sessionSend(now, sm, dest, wire.SessionMsgPathMtuNotification, b[:])
				}
			}
		}
	}
}

func (c *Core) sessionSend(now time.Time, sm *sessionMetrics, dest identity.NodeAddr, t wire.SessionMessageType, body []byte) {
	if err := c.sess.SendMessage(now, dest, t, body); err != nil {
		sm.link.RecordSendFailure()
		return
	}
	sm.link.RecordSendSuccess()
}

// SessionMMP returns the metrics of the session with remote.
func (c *Core) SessionMMP(remote identity.NodeAddr) (*mmp.Link, bool) {
	sm := c.smmp[remote]
	if sm == nil {
		return nil, false
	}
	return sm.link, true
}
