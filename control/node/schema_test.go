package node

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/bloom"
	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/peer"
	"github.com/fips-go/fips/control/rendezvous"
	"github.com/fips-go/fips/control/rendezvous/lan"
	"github.com/fips-go/fips/control/route"
	"github.com/fips-go/fips/control/session"
	"github.com/fips-go/fips/control/tree"
	"github.com/fips-go/fips/dataplane/afxdp"
)

// jsonLayout describes what encoding/json sees of t: every field's name,
// tag and type in order, structs by their fields rather than their names.
func jsonLayout(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		var b strings.Builder
		b.WriteString("{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fmt.Fprintf(&b, "%s %q %s; ", f.Name, f.Tag.Get("json"), jsonLayout(f.Type))
		}
		b.WriteString("}")
		return b.String()
	case reflect.Slice:
		return "[]" + jsonLayout(t.Elem())
	case reflect.Pointer:
		return "*" + jsonLayout(t.Elem())
	default:
		return t.String()
	}
}

// TestSchemaLayoutsMatch: the copies in control/ctl of the routing and
// link packages' (and AF_XDP's) snapshot types keep every field, key and
// order, so the conversions in schema.go drop nothing and show_* render
// as those types did.
func TestSchemaLayoutsMatch(t *testing.T) {
	for _, p := range []struct{ src, dst any }{
		{route.Snapshot{}, ctl.RouteSnapshot{}},
		{route.PendingLookupRow{}, ctl.RoutePendingLookup{}},
		{route.ForwardingStats{}, ctl.RouteForwardingStats{}},
		{route.LookupStats{}, ctl.RouteLookupStats{}},
		{route.CongestionStats{}, ctl.RouteCongestionStats{}},
		{route.LimitStats{}, ctl.RouteLimitStats{}},
		{route.CacheEntryView{}, ctl.RouteCacheEntry{}},
		{tree.Snapshot{}, ctl.TreeSnapshot{}},
		{tree.PeerSnapshot{}, ctl.TreePeerSnapshot{}},
		{tree.Stats{}, ctl.TreeStats{}},
		{bloom.Stats{}, ctl.BloomStats{}},
		{rendezvous.Stats{}, ctl.RendezvousStats{}},
		{rendezvous.PeerFailure{}, ctl.NostrPeerFailure{}},
		{session.SnapshotEntry{}, ctl.SessionEntry{}},
		{peer.Stats{}, ctl.LinkLayerStats{}},
		{lan.Stats{}, ctl.LANStats{}},
		{afxdp.Statistics{}, ctl.XSKStatistics{}},
	} {
		src, dst := reflect.TypeOf(p.src), reflect.TypeOf(p.dst)
		if s, d := jsonLayout(src), jsonLayout(dst); s != d {
			t.Errorf("%v and %v differ:\n%s\n%s", src, dst, s, d)
		}
	}
}
