package logging

import (
	"log/slog"

	"github.com/fips-go/fips/control/identity"
)

// Named is a's display name under f (upstream's peer_display_name),
// computed only when a record carrying it is written: naming a node may
// encode its npub, which a filtered-out debug line should not pay for.
func Named(f func(identity.NodeAddr) string, a identity.NodeAddr) slog.LogValuer { return named{f, a} }

type named struct {
	f func(identity.NodeAddr) string
	a identity.NodeAddr
}

func (n named) LogValue() slog.Value {
	if n.f == nil {
		return slog.StringValue(n.a.ShortHex())
	}
	return slog.StringValue(n.f(n.a))
}
