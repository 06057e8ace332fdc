package ctl

// Response data of show_bpf and of show_status' dataplane field (fips-go
// additions): which dataplane runs, the XDP and tc programs, the dataplane
// workers and the AF_XDP sockets. control/node fills them; fipsctl,
// fipstop and the metrics collector read them.

// Dataplane modes (dataplane.mode).
const (
	DataplaneAuto      = "auto"
	DataplaneXDP       = "xdp"
	DataplaneUserspace = "userspace"
)

// DataplaneView is show_status's dataplane field (fips-go addition).
type DataplaneView struct {
	// Mode is what runs: xdp or userspace.
	Mode string `json:"mode"`
	// Configured is dataplane.mode.
	Configured string `json:"configured"`
	// Reason says why this mode runs.
	Reason     string         `json:"reason"`
	Interfaces []XDPInterface `json:"interfaces"`
	// Engine is what the dataplane workers did.
	Engine EngineView `json:"engine"`
	// TC is the ECN programs (fips-go addition): where they run, or why not.
	TC TCView `json:"tc"`
	// AFXDP says whether AF_XDP sockets receive the redirected frames.
	AFXDP AFXDPView `json:"afxdp"`
	// OuterCE counts established frames whose outer IP header carried
	// ECN CE (read from the socket: IP_RECVTOS / IPV6_RECVTCLASS),
	// handled as FMP CE, on the workers and the loop alike.
	OuterCE uint64 `json:"outer_ce_frames"`
}

// AFXDPView is show_status.dataplane.afxdp (fips-go addition).
type AFXDPView struct {
	Enabled bool `json:"enabled"`
	Sockets int  `json:"sockets"`
	// SharedUMEM is how many of the sockets share one UMEM.
	SharedUMEM int    `json:"shared_umem_sockets"`
	Reason     string `json:"reason"`
}

// TCView says whether tc_fips_egress (outgoing FIPS UDP marked ECT(0))
// and tc_fips_ingress (outer ECN counted) run, and where.
type TCView struct {
	Attached   bool          `json:"attached"`
	Reason     string        `json:"reason"`
	Interfaces []TCInterface `json:"interfaces"`
}

// TCInterface is the pair of tc programs on one interface.
type TCInterface struct {
	Name       string `json:"name"`
	Ifindex    int    `json:"ifindex"`
	AttachMode string `json:"attach_mode"` // tcx or clsact
	EgressID   uint32 `json:"egress_program_id"`
	IngressID  uint32 `json:"ingress_program_id"`
}

// XDPInterface is the program on one interface.
type XDPInterface struct {
	Name       string `json:"name"`
	Ifindex    int    `json:"ifindex"`
	AttachMode string `json:"attach_mode"` // native or generic
	ProgramID  uint32 `json:"program_id"`
}

// EngineView is show_status.dataplane.engine (fips-go addition): what
// the workers did.
type EngineView struct {
	Enabled           bool   `json:"enabled"`
	Workers           int    `json:"workers"`
	LinksPublished    int    `json:"links_published"`
	RoutesPublished   int    `json:"routes_published"`
	FramesOpened      uint64 `json:"frames_opened"`
	FramesDropped     uint64 `json:"frames_dropped"`
	Forwarded         uint64 `json:"forwarded"`
	Delivered         uint64 `json:"delivered"`
	Originated        uint64 `json:"originated"`
	SessionsPublished int    `json:"sessions_published"`
	ForwardMisses     uint64 `json:"forward_misses"`
	ForwardErrors     uint64 `json:"forward_errors"`
	Upcalls           uint64 `json:"upcalls"`
	UpcallsRefused    uint64 `json:"upcalls_refused"`
	RoutesRefused     uint64 `json:"routes_refused"`
	RoutesExpired     uint64 `json:"routes_expired"`
	// EgressToLoop counts TUN packets the workers left to the loop, by
	// reason.
	EgressToLoop map[string]uint64 `json:"egress_to_loop"`
}

// BPFView is show_bpf (fips-go addition): the XDP program per interface,
// its counters summed over CPUs and its maps' occupancy.
type BPFView struct {
	DataplaneView
	ProgramID uint32       `json:"program_id"` // 0 in userspace
	Counters  []XDPCounter `json:"counters"`
	Maps      *XDPMaps     `json:"maps"` // null in userspace
	// TCCounters are the tc programs' counters (empty when they do not run).
	TCCounters []TCCounter `json:"tc_counters"`
	// XSKs are the AF_XDP sockets with their ring statistics.
	XSKs []XSKView `json:"xsks"`
	// XSKTx is what the AF_XDP workers sent through TX rings.
	XSKTx XSKTxView `json:"xsk_tx"`
}

// TCCounter is one (direction, reason) pair's packets and bytes.
type TCCounter struct {
	Direction string `json:"direction"`
	Reason    string `json:"reason"`
	Packets   uint64 `json:"packets"`
	Bytes     uint64 `json:"bytes"`
}

// XDPCounter is one (verdict, reason) pair's packets and bytes.
type XDPCounter struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// XDPMaps is the occupancy of the program's bounded maps.
type XDPMaps struct {
	Links        uint32 `json:"links"`
	LinksMax     uint32 `json:"links_max"`
	LinksRefused uint64 `json:"links_refused"`
	Ratelimit    uint32 `json:"ratelimit_entries"`
	RatelimitMax uint32 `json:"ratelimit_max"`
	// LocalAddrs are the node's own addresses the program acts on (the
	// bound address, or every host address for a wildcard bind); frames
	// to other destinations pass as not_local. LocalAddrsRefused counts
	// addresses the full map could not take.
	LocalAddrs        uint32 `json:"local_addrs"`
	LocalAddrsMax     uint32 `json:"local_addrs_max"`
	LocalAddrsRefused uint64 `json:"local_addrs_refused"`
	// MapErrors counts link-map and local-address writes that failed
	// (LastError the last).
	MapErrors uint64 `json:"map_errors"`
	LastError string `json:"last_error,omitempty"`
}

// XSKView is one AF_XDP socket in show_bpf (fips-go addition).
type XSKView struct {
	Interface string `json:"interface"`
	Ifindex   int    `json:"ifindex"`
	Queue     int    `json:"queue"`
	Slot      uint32 `json:"slot"`
	XSKStatistics
	// Frames the reader parsed; ToLoop those the worker left to the
	// event loop (copied, as a socket read); Invalid those that were not
	// a UDP datagram; OtherPort those to no bound UDP transport;
	// Refused those the stopped loop refused.
	Frames    uint64 `json:"frames"`
	ToLoop    uint64 `json:"to_loop"`
	Invalid   uint64 `json:"invalid"`
	OtherPort uint64 `json:"other_port"`
	Refused   uint64 `json:"refused"`
}

// XSKTxView is show_bpf.xsk_tx: what the workers sent through TX rings
// and what they sent through the UDP sockets instead, by reason
// (fips-go addition).
type XSKTxView struct {
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason"`
	// Frames sealed into TX frames.
	Frames uint64 `json:"frames"`
	// Sent through the UDP socket instead: no resolved neighbour on an
	// AF_XDP interface; over the interface MTU; every TX frame in
	// flight; the destination cache full.
	FallbackNoRoute   uint64 `json:"fallback_no_route"`
	FallbackTooBig    uint64 `json:"fallback_too_big"`
	FallbackNoFrame   uint64 `json:"fallback_no_frame"`
	FallbackCacheFull uint64 `json:"fallback_cache_full"`
	// Resolves counts reads of the kernel's tables.
	Resolves uint64 `json:"resolves"`
}

// XSKStatistics are one AF_XDP socket's ring statistics in show_bpf: the
// field layout of afxdp.Statistics, which control/node converts.
type XSKStatistics struct {
	RxDropped       uint64 `json:"rx_dropped"`            // frames the kernel dropped for this socket (e.g. too large)
	RxInvalidDescs  uint64 `json:"rx_invalid_descs"`      // bad fill-ring descriptors
	TxInvalidDescs  uint64 `json:"tx_invalid_descs"`      // bad TX descriptors
	RxRingFull      uint64 `json:"rx_ring_full"`          // frames dropped because the RX ring was full
	RxFillRingEmpty uint64 `json:"fill_ring_empty_descs"` // times the fill ring had no frame for the kernel
	TxRingEmpty     uint64 `json:"tx_ring_empty_descs"`
	Received        uint64 `json:"received"`         // frames read from the RX ring
	Wakeups         uint64 `json:"wakeups"`          // need_wakeup kicks of the fill ring
	Transmitted     uint64 `json:"transmitted"`      // frames the kernel completed from the TX ring
	TxPoolEmpty     uint64 `json:"tx_pool_empty"`    // TX frames asked for when none was free (the caller fell back)
	TxKicks         uint64 `json:"tx_kicks"`         // sendto calls that drove the TX ring
	TxKickErrors    uint64 `json:"tx_kick_errors"`   // of which failed other than EAGAIN/ENOBUFS/EBUSY
	BusyPolls       uint64 `json:"busy_polls"`       // empty-ring waits that polled first (dataplane.afxdp_busy_poll_us)
	BusyPollHits    uint64 `json:"busy_poll_hits"`   // of which found frames before parking
	KernelBusyPoll  bool   `json:"kernel_busy_poll"` // SO_PREFER_BUSY_POLL and SO_BUSY_POLL accepted
	ZeroCopy        bool   `json:"zero_copy"`        // bound in zero-copy mode
	NeedWakeup      bool   `json:"need_wakeup"`      // bound with XDP_USE_NEED_WAKEUP
}
