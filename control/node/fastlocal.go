package node

import (
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/dataplane"
)

// The loop's half of the IPv6 adapter on the workers (dataplane's
// local.go): it publishes the sessions they may deliver and originate
// for, and folds what they counted into show_status.

// publishLocal republishes the adapter table when the sessions changed,
// and on ticks (path MTUs move).
func (n *Node) publishLocal(tick bool) {
	c := n.core
	if n.eng == nil || c.v6 == nil {
		return
	}
	if !c.sess.Publish() && !tick && n.eng.PublishedLocal() != nil {
		return
	}
	ps := c.sess.Published()
	lt := dataplane.NewLocal(n.transportMTU(), ps.Len())
	ps.Range(func(fs *session.FastSession) {
		sm := c.smmp[fs.Addr()]
		if sm == nil {
			return // no session MMP: the loop's
		}
		lt.Add(&dataplane.LocalSession{Session: fs, MMP: sm.link, IPv6MTU: c.ipv6MTU(fs.Addr())})
	})
	n.eng.PublishLocal(lt)
}

// addFastIPv6 folds the workers' adapter counters into the loop's.
func (n *Node) addFastIPv6(s *ctl.IPv6Stats) {
	if n.eng == nil {
		return
	}
	f := n.eng.IPv6()
	s.Sent += f.Sent.Load()
	s.Received += f.Received.Load()
	s.CEMarked += f.CEMarked.Load()
	s.MSSClamped += f.MSSClamped.Load()
	s.Dropped += f.Dropped.Load()
	s.WriteErrors += f.WriteErrors.Load()
}
