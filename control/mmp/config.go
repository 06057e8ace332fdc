package mmp

import (
	"fmt"
	"time"
)

// Mode is the MMP operating mode (node.mmp.mode, node.session_mmp.mode).
type Mode uint8

// Modes. The zero value is Full, upstream's default.
const (
	// Full sends SenderReports and ReceiverReports.
	Full Mode = iota
	// Lightweight sends ReceiverReports only.
	Lightweight
	// Minimal sends no reports (spin bit and CE only). Sessions still send
	// PathMtuNotifications.
	Minimal
)

// String is the config spelling: "full", "lightweight" or "minimal".
func (m Mode) String() string {
	switch m {
	case Full:
		return "full"
	case Lightweight:
		return "lightweight"
	case Minimal:
		return "minimal"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses upstream's config spelling. Like upstream's serde
// lowercase enum it is case-sensitive.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "full":
		return Full, nil
	case "lightweight":
		return Lightweight, nil
	case "minimal":
		return Minimal, nil
	}
	return Full, fmt.Errorf("mmp: unknown mode %q (want full, lightweight or minimal)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) {
	if m > Minimal {
		return nil, fmt.Errorf("mmp: invalid mode %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Constants from upstream's src/proto/mmp/limits.rs and receiver.rs.
const (
	EWMAShortAlpha = 0.25       // dual EWMA short-term gain
	EWMALongAlpha  = 1.0 / 32.0 // dual EWMA long-term gain

	ColdStartInterval        = 200 * time.Millisecond // link interval before/at cold start
	MinReportInterval        = 1000 * time.Millisecond
	MaxReportInterval        = 5000 * time.Millisecond
	ColdStartSamples         = 5 // interval updates at the cold-start floor
	MinSessionReportInterval = 500 * time.Millisecond
	MaxSessionReportInterval = 10000 * time.Millisecond
	SessionColdStartInterval = 1000 * time.Millisecond

	DefaultOWDWindowSize = 32
	DefaultLogInterval   = 30 * time.Second

	// RekeyJitterGrace is how long after a rekey cutover jitter is not
	// updated (drain window 10 s + 5 s).
	RekeyJitterGrace = 15 * time.Second

	// MinActionablePathMTU is the smallest remote-supplied path MTU acted on.
	MinActionablePathMTU = 256
	// MinPathMTUNotificationInterval is the floor of the notification
	// interval max(10 s, 5·SRTT).
	MinPathMTUNotificationInterval = 10 * time.Second

	// Default ECN congestion thresholds (node.ecn.*).
	DefaultECNLossThreshold = 0.05
	DefaultECNETXThreshold  = 3.0

	maxBackoffShift = 5 // session send-failure backoff cap 2^5
)

const (
	coldStartMS        = int64(ColdStartInterval / time.Millisecond)
	minReportMS        = int64(MinReportInterval / time.Millisecond)
	maxReportMS        = int64(MaxReportInterval / time.Millisecond)
	minSessionReportMS = int64(MinSessionReportInterval / time.Millisecond)
	maxSessionReportMS = int64(MaxSessionReportInterval / time.Millisecond)
	sessionColdStartMS = int64(SessionColdStartInterval / time.Millisecond)
	rekeyGraceMS       = int64(RekeyJitterGrace / time.Millisecond)
)

// Config is one layer's MMP configuration (node.mmp or node.session_mmp).
type Config struct {
	Mode          Mode
	LogInterval   time.Duration // operator log cadence (log_interval_secs)
	OWDWindowSize int           // OWD trend ring size (owd_window_size)
}

// DefaultConfig is node.mmp's default: full mode, 30 s log, 32-sample OWD.
func DefaultConfig() Config {
	return Config{Mode: Full, LogInterval: DefaultLogInterval, OWDWindowSize: DefaultOWDWindowSize}
}

// DefaultSessionConfig is node.session_mmp's default (the same values).
func DefaultSessionConfig() Config { return DefaultConfig() }
