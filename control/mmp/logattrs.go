package mmp

import (
	"fmt"
	"log/slog"
)

// The fields of upstream's three MMP log lines ("MMP link metrics", "MMP
// link teardown", "MMP session metrics"), formatted as upstream formats
// them: "12.3ms", "0.5%", "1.2MB/s", "n/a" before a value is measured.

// LinkLogAttrs are the fields of the periodic "MMP link metrics" line
// after peer: the long-term RTT and loss trends, jitter, goodput and the
// cumulative frame counts.
func (l *Link) LinkLogAttrs() []slog.Attr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return []slog.Attr{
		slog.String("rtt", l.trendRTT()),
		slog.String("loss", l.trendLoss()),
		slog.String("jitter", l.jitterMs()),
		slog.String("goodput", FormatThroughput(l.met.goodput)),
		slog.Uint64("tx_pkts", l.snd.cumPackets),
		slog.Uint64("rx_pkts", l.rcv.cumPackets),
	}
}

// SessionLogAttrs are the fields of "MMP session metrics" after session:
// the link fields with the last observed path MTU.
func (l *Link) SessionLogAttrs() []slog.Attr {
	l.mu.Lock()
	defer l.mu.Unlock()
	mtu := uint16(0)
	if l.pmtu != nil {
		mtu = l.pmtu.LastObserved()
	}
	return []slog.Attr{
		slog.String("rtt", l.trendRTT()),
		slog.String("loss", l.trendLoss()),
		slog.String("jitter", l.jitterMs()),
		slog.String("goodput", FormatThroughput(l.met.goodput)),
		slog.Uint64("mtu", uint64(mtu)),
		slog.Uint64("tx_pkts", l.snd.cumPackets),
		slog.Uint64("rx_pkts", l.rcv.cumPackets),
	}
}

// TeardownLogAttrs are the fields of "MMP link teardown" after peer: the
// link's lifetime summary (smoothed RTT, loss, ETX, byte counts).
func (l *Link) TeardownLogAttrs() []slog.Attr {
	l.mu.Lock()
	defer l.mu.Unlock()
	rtt := "n/a"
	if d, ok := l.SRTT(); ok {
		rtt = fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return []slog.Attr{
		slog.String("rtt", rtt),
		slog.String("loss", fmt.Sprintf("%.1f%%", l.met.loss()*100)),
		slog.String("jitter", l.jitterMs()),
		slog.String("etx", fmt.Sprintf("%.2f", l.met.etx)),
		slog.String("goodput", FormatThroughput(l.met.goodput)),
		slog.Uint64("tx_pkts", l.snd.cumPackets),
		slog.Uint64("tx_bytes", l.snd.cumBytes),
		slog.Uint64("rx_pkts", l.rcv.cumPackets),
		slog.Uint64("rx_bytes", l.rcv.cumBytes),
	}
}

func (l *Link) trendRTT() string {
	if !l.met.rttTrend.init {
		return "n/a"
	}
	return fmt.Sprintf("%.1fms", l.met.rttTrend.long/1000)
}

func (l *Link) trendLoss() string {
	if !l.met.lossTrend.init {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", l.met.lossTrend.long*100)
}

func (l *Link) jitterMs() string { return fmt.Sprintf("%.1fms", float64(l.rcv.jitter.us())/1000) }

// FormatThroughput is upstream's throughput form: "n/a" for 0, else
// B/s, KB/s or MB/s (decimal units) with one decimal above bytes.
func FormatThroughput(bps float64) string {
	switch {
	case bps == 0:
		return "n/a"
	case bps >= 1e6:
		return fmt.Sprintf("%.1fMB/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.1fKB/s", bps/1e3)
	}
	return fmt.Sprintf("%.0fB/s", bps)
}
