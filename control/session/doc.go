// Package session owns FIPS's end-to-end sessions (FSP), byte- and
// behaviour-compatible with upstream FIPS master (src/node/session,
// src/node/handlers/session.rs, the FSP parts of src/node/handlers/rekey.rs
// and src/proto/fsp): the session table keyed by the remote NodeAddr, the
// Noise XK establishment carried in SessionSetup / SessionAck / SessionMsg3,
// sealing and opening phase-0 encrypted messages (DataPacket and the other
// session messages), the coordinate warmup (CP flag, CoordsWarmup), the
// source's handling of the plaintext routing signals (CoordsRequired,
// PathBroken, MtuExceeded) with upstream's admission gate, crossing setups,
// the per-link-peer SessionSetup rate limiter, handshake resends and
// timeouts, the idle purge, the bounded pending queues, and FSP rekey
// (K bit, pending/current/previous trial decryption, cutover, drain,
// dampening), which also re-establishes sessions with restarted peers.
//
// The Table is a pure, clock-driven state machine: every method takes the
// current time, nothing here starts goroutines, sleeps or reads a clock, and
// iteration is in NodeAddr order so runs are deterministic. It is not safe
// for concurrent use; the node calls it from one goroutine.
//
// It must not touch anything outside the session layer: it does not route,
// build SessionDatagrams, own the coordinate or identity caches, run lookups,
// measure MMP, or speak to the TUN device. Those reach it through Env (the
// router and caches), and it reports through Upper (delivery, frame
// observations for MMP, and session events).
package session
