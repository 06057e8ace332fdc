package main

import (
	"log/slog"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/native"
)

// warnUnbuilt warns about enabled features upstream has and this build
// does not, so a configuration written for upstream does not silently do
// less (transports are warned about by buildTransports).
func warnUnbuilt(cfg *config.Config, log *slog.Logger) {
	if cfg.Node.NativeAPI.Enabled && !native.Supported {
		log.Warn("node.native_api.enabled: the native datagram API is not supported on this platform (no SCM_RIGHTS); no API socket is bound",
			"socket_path", cfg.Node.NativeAPI.SocketPath)
	}
}
