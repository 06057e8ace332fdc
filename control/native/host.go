package native

import (
	"context"
	"time"

	"github.com/fips-go/fips/control/identity"
)

// Host is the node as the API server sees it. The registry lives on the
// node's event loop; the server reaches it only through Host.
type Host interface {
	// Registry runs f on the node's event loop with the registry; an
	// error (ErrShuttingDown, ctx's) when the loop is gone.
	Registry(ctx context.Context, f func(r *Registry, now time.Time)) error
	// Send hands one datagram a client wrote to the node for the mesh.
	// The node calls done once it no longer needs payload. It never
	// blocks for long: the server bounds what each flow has in flight.
	Send(o Outbound) error
	// MaxPayload is the largest datagram a flow carries now: the
	// transport MTU less the FIPS encapsulation and the port header.
	MaxPayload() uint16
	// Npub is this node's own npub.
	Npub() string
}

// Outbound is one datagram a client wrote onto its flow.
type Outbound struct {
	Key     FlowKey
	PubKey  identity.PublicKey
	Payload []byte
	Done    func()
}

// Config is node.native_api as the server uses it.
type Config struct {
	Path   string
	Limits Limits
	// Debug answers the stats, inject and arrive commands.
	Debug bool
}
