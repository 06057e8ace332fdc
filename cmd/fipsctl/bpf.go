package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fips-go/fips/control/ctl"
)

// runBPF is `fipsctl bpf stats [--json]` (fips-go addition): the XDP
// program's attachments, counters and map occupancy (show_bpf).
func runBPF(e *env, args []string) error {
	const usage = "usage: fipsctl bpf stats [--json]"
	asJSON := false
	var pos []string
	for _, a := range args {
		switch a {
		case "--json", "-json":
			asJSON = true
		case "-h", "--help", "-help":
			fmt.Fprintln(e.stdout, usage)
			return nil
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 1 || pos[0] != "stats" {
		return usageError{msg: "a subcommand is required", usage: "bpf stats [--json]"}
	}
	if asJSON {
		return query(e, "show_bpf", nil)
	}
	data, err := ctl.Call(context.Background(), e.socket, "show_bpf", nil)
	if err != nil {
		return err
	}
	var s ctl.BPFView
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("invalid response JSON: %v", err)
	}
	return printBPF(e.stdout, &s)
}

// printBPF renders show_bpf as tables.
func printBPF(w io.Writer, s *ctl.BPFView) error {
	var b strings.Builder
	fmt.Fprintf(&b, "dataplane: %s (dataplane.mode %s)\n%s\n", s.Mode, s.Configured, s.Reason)
	if len(s.Interfaces) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "INTERFACE\tIFINDEX\tATTACH\tPROGRAM")
		for _, i := range s.Interfaces {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", i.Name, i.Ifindex, i.AttachMode, i.ProgramID)
		}
		tw.Flush()
	}
	if len(s.Counters) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERDICT\tREASON\tPACKETS\tBYTES")
		for _, c := range s.Counters {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", c.Verdict, c.Reason, c.Packets, c.Bytes)
		}
		tw.Flush()
	}
	if s.Mode == ctl.DataplaneXDP {
		fmt.Fprintf(&b, "\nafxdp: %s\n", s.AFXDP.Reason)
	}
	if len(s.XSKs) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "XSK INTERFACE\tQUEUE\tSLOT\tMODE\tRECEIVED\tTO LOOP\tRX_DROPPED\tRX_RING_FULL\tFILL_RING_EMPTY\tRX_INVALID\tTX_INVALID\tWAKEUPS")
		for _, x := range s.XSKs {
			mode := "copy"
			if x.ZeroCopy {
				mode = "zero-copy"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", x.Interface, x.Queue, x.Slot, mode, x.Received, x.ToLoop,
				x.RxDropped, x.RxRingFull, x.RxFillRingEmpty, x.RxInvalidDescs, x.TxInvalidDescs, x.Wakeups)
		}
		tw.Flush()
	}
	if s.XSKTx.Enabled {
		t := s.XSKTx
		fmt.Fprintf(&b, "\nxsk transmit: %d frames through TX rings; through the UDP sockets instead: no route %d, too big %d, no frame %d, cache full %d (%d route lookups)\n",
			t.Frames, t.FallbackNoRoute, t.FallbackTooBig, t.FallbackNoFrame, t.FallbackCacheFull, t.Resolves)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "XSK INTERFACE\tQUEUE\tTRANSMITTED\tTX_KICKS\tTX_POOL_EMPTY\tTX_RING_EMPTY\tTX_KICK_ERRORS")
		for _, x := range s.XSKs {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", x.Interface, x.Queue, x.Transmitted, x.TxKicks, x.TxPoolEmpty, x.TxRingEmpty, x.TxKickErrors)
		}
		tw.Flush()
	}
	if s.Mode == ctl.DataplaneXDP {
		fmt.Fprintf(&b, "\necn: %s\n", s.TC.Reason)
	}
	if len(s.TC.Interfaces) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "INTERFACE\tIFINDEX\tTC ATTACH\tEGRESS PROGRAM\tINGRESS PROGRAM")
		for _, i := range s.TC.Interfaces {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\n", i.Name, i.Ifindex, i.AttachMode, i.EgressID, i.IngressID)
		}
		tw.Flush()
	}
	if len(s.TCCounters) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TC\tREASON\tPACKETS\tBYTES")
		for _, c := range s.TCCounters {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", c.Direction, c.Reason, c.Packets, c.Bytes)
		}
		tw.Flush()
	}
	if m := s.Maps; m != nil {
		fmt.Fprintf(&b, "\nmaps: links %d/%d (refused %d), ratelimit %d/%d, local addresses %d/%d (refused %d), map write errors %d\n",
			m.Links, m.LinksMax, m.LinksRefused, m.Ratelimit, m.RatelimitMax, m.LocalAddrs, m.LocalAddrsMax, m.LocalAddrsRefused, m.MapErrors)
		if m.LastError != "" {
			fmt.Fprintf(&b, "last map error: %s\n", m.LastError)
		}
	}
	fmt.Fprintf(&b, "outer CE frames (handled as FMP CE): %d\n", s.OuterCE)
	_, err := io.WriteString(w, b.String())
	return err
}
