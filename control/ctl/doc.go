// Package ctl is the FIPS control socket: the line-delimited JSON protocol
// that fipsctl, fipstop and operators' scripts use to query and steer a
// running node, the server that answers it, and a client.
//
// The protocol is upstream FIPS's, byte for byte where it is observable:
//
//   - Transport: a Unix stream socket (default path from [DefaultSocketPath]:
//     /run/fips/control.sock, then /var/run/fips on macOS/FreeBSD, then
//     $XDG_RUNTIME_DIR/fips, then /tmp/fips-control.sock), mode 0770, group
//     fips; on Windows a TCP listener on 127.0.0.1:21210.
//   - One request per connection: a single JSON object
//     {"command": "<name>", "params": {...}} ended by '\n', at most 4096
//     bytes; one response line {"status":"ok","data":...} or
//     {"status":"error","message":"..."}; then the server closes.
//   - 5 s to read the request, 5 s for the handler to answer
//     ("query timeout"), 5 s to write the response.
//
// Commands are plugged in by the packages that own the state they report:
// each registers a [Handler] under its command name in a [Registry], and
// returns either data (marshalled as the response's "data") or an error
// whose message the client sees (see [Error]). The response structs for the
// commands whose schemas upstream pins with snapshot fixtures are in
// types.go; schema.go, schema_mesh.go and schema_bpf.go hold the rest of
// control/node's (show_status' additions, the routing-layer commands, the
// stats history, show_bpf, …), so that clients decode responses without
// linking the daemon.
package ctl
