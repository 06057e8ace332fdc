package transport

import (
	"log/slog"

	"github.com/fips-go/fips/control/logging"
)

// Logger is a transport instance's logger: log (nil: slog.Default())
// with upstream's target fips::transport::<kind> and the transport,
// transport_id and, for a named instance, name attributes.
func Logger(log *slog.Logger, kind string, id ID, name string) *slog.Logger {
	if log == nil {
		log = slog.Default()
	}
	log = logging.WithTarget(log, "fips::transport::"+kind).With("transport", kind, "transport_id", uint32(id))
	if name != "" {
		log = log.With("name", name)
	}
	return log
}
