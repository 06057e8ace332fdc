//go:build linux

package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// procCPU is a process's user+system CPU time in seconds.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	return parseProcStat(string(b))
}

// machineCPU is the busy CPU time of the whole machine in seconds (all
// cores; everything but idle and iowait).
func machineCPU() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	return parseMachineStat(string(b))
}

// cpuSnapshot is the CPU seconds of every daemon of a path by node, and
// of the machine.
type cpuSnapshot struct {
	node    map[string]float64
	machine float64
}

func (p *Path) cpu() (cpuSnapshot, error) {
	s := cpuSnapshot{node: map[string]float64{}}
	for node, pids := range p.daemons {
		for _, pid := range pids {
			c, err := procCPU(pid)
			if err != nil {
				return s, err
			}
			s.node[node] += c
		}
	}
	var err error
	s.machine, err = machineCPU()
	return s, err
}

// cpuPerGB turns two snapshots around a transfer of bytes into the
// metrics prefix_cpu_{src,relay,dst,machine}_s_per_gb; relay is the mean
// over the relays.
func (p *Path) cpuPerGB(prefix string, before, after cpuSnapshot, bytes float64, out map[string]float64) {
	if bytes <= 0 {
		return
	}
	gb := bytes / 1e9
	out[prefix+"_cpu_machine_s_per_gb"] = (after.machine - before.machine) / gb
	if len(p.daemons) == 0 {
		return
	}
	out[prefix+"_cpu_src_s_per_gb"] = (after.node[p.Src] - before.node[p.Src]) / gb
	out[prefix+"_cpu_dst_s_per_gb"] = (after.node[p.Dst] - before.node[p.Dst]) / gb
	if len(p.Relays) > 0 {
		sum := 0.0
		for _, r := range p.Relays {
			sum += after.node[r] - before.node[r]
		}
		out[prefix+"_cpu_relay_s_per_gb"] = sum / float64(len(p.Relays)) / gb
	}
}

// iperf3Result is what the bench reads from `iperf3 -J`.
type iperf3Result struct {
	End struct {
		SumSent struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   float64 `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			LostPercent   float64 `json:"lost_percent"`
			Packets       float64 `json:"packets"`
		} `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
}

// iperf3 runs one iperf3 client from p.Src against a one-shot server on
// p.DstAddr, with args (after -c addr -t secs -J).
func (p *Path) iperf3(secs int, args ...string) (iperf3Result, error) {
	var r iperf3Result
	srv := p.Mesh.Spawn(p.Dst, "iperf3", "-s", "-1", "-B", p.DstAddr)
	defer srv.Stop()
	if !p.Mesh.WaitListening(p.Dst, 5201, 10*time.Second) {
		return r, fmt.Errorf("bench: iperf3 server in %s not listening", p.Dst)
	}
	out, err := p.Mesh.Exec(p.Src, append([]string{"iperf3", "-c", p.DstAddr, "-t", strconv.Itoa(secs), "-J"}, args...)...)
	if jerr := json.Unmarshal(out, &r); jerr != nil || err != nil || r.Error != "" {
		return r, fmt.Errorf("bench: iperf3 %v %s→%s: %v %v %s\n%s", args, p.Src, p.Dst, err, jerr, r.Error, firstLines(string(out), 10))
	}
	return r, nil
}

// ping sends pings at interval for dur (or count of them) and returns
// the RTTs.
func (p *Path) ping(interval string, count int, dur time.Duration) ([]float64, error) {
	args := []string{"ping", "-6", "-n", "-i", interval, "-W", "1"}
	if count > 0 {
		args = append(args, "-c", strconv.Itoa(count))
	} else {
		args = append(args, "-w", strconv.Itoa(int(math.Ceil(dur.Seconds()))))
	}
	out, _ := p.Mesh.Exec(p.Src, append(args, p.DstAddr)...)
	rtts := ParsePing(string(out))
	if len(rtts) == 0 {
		return nil, fmt.Errorf("bench: %s %s: no ping replies %s→%s\n%s", p.System, p.Topology.Name, p.Src, p.DstAddr, firstLines(string(out), 5))
	}
	return rtts, nil
}

func pingStats(prefix string, rtts []float64, out map[string]float64) {
	out[prefix+"_p50_ms"] = Percentile(rtts, 50)
	out[prefix+"_p99_ms"] = Percentile(rtts, 99)
	out[prefix+"_max_ms"] = Percentile(rtts, 100)
}

// MinPingSamples is how many replies a ping figure needs to be reported
// without a note.
const MinPingSamples = 100

// TCP measures `streams` parallel TCP streams for secs seconds into out:
// rate, retransmits and CPU per GB; with loadPing, ping RTTs taken
// during the transfer.
func (p *Path) TCP(streams, secs int, loadPing bool, out map[string]float64) (notes []string, err error) {
	prefix := fmt.Sprintf("tcp%d", streams)
	before, err := p.cpu()
	if err != nil {
		return nil, err
	}
	pingDone := make(chan []float64, 1)
	if loadPing {
		go func() {
			// Start once the transfer runs; stop before it ends.
			time.Sleep(500 * time.Millisecond)
			rtts, _ := p.ping("0.02", 0, time.Duration(secs-1)*time.Second)
			pingDone <- rtts
		}()
	}
	r, err := p.iperf3(secs, "-P", strconv.Itoa(streams))
	after, cerr := p.cpu()
	var rtts []float64
	if loadPing {
		rtts = <-pingDone
	}
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	out[prefix+"_mbps"] = r.End.SumReceived.BitsPerSecond / 1e6
	out[prefix+"_retransmits"] = r.End.SumSent.Retransmits
	p.cpuPerGB(prefix, before, after, r.End.SumReceived.Bytes, out)
	if loadPing {
		if len(rtts) == 0 {
			notes = append(notes, "no ping reply under load")
		} else {
			pingStats("ping_load", rtts, out)
			if len(rtts) < MinPingSamples {
				notes = append(notes, fmt.Sprintf("only %d ping replies under load", len(rtts)))
			}
		}
	}
	return notes, nil
}

// UDP offers rate (iperf3 -b) of payloadLen-byte datagrams for secs
// seconds: delivered rate and loss.
func (p *Path) UDP(rate string, payloadLen, secs int, out map[string]float64) error {
	r, err := p.iperf3(secs, "-u", "-b", rate, "-l", strconv.Itoa(payloadLen))
	if err != nil {
		return err
	}
	out["udp_offered_mbps"] = r.End.SumSent.BitsPerSecond / 1e6
	out["udp_delivered_mbps"] = r.End.SumReceived.BitsPerSecond / 1e6
	out["udp_loss_pct"] = r.End.SumReceived.LostPercent
	return nil
}

// IdlePing takes count pings 10 ms apart on the idle path.
func (p *Path) IdlePing(count int, out map[string]float64) (notes []string, err error) {
	rtts, err := p.ping("0.01", count, 0)
	if err != nil {
		return nil, err
	}
	pingStats("ping_idle", rtts, out)
	if len(rtts) < MinPingSamples {
		notes = append(notes, fmt.Sprintf("only %d idle ping replies", len(rtts)))
	}
	return notes, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}
