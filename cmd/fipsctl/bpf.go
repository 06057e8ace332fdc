package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fips-go/fips/control/ctl"
)

// bpfStats mirrors show_bpf's JSON (node.BPFView).
type bpfStats struct {
	Mode       string `json:"mode"`
	Configured string `json:"configured"`
	Reason     string `json:"reason"`
	Interfaces []struct {
		Name       string `json:"name"`
		Ifindex    int    `json:"ifindex"`
		AttachMode string `json:"attach_mode"`
		ProgramID  uint32 `json:"program_id"`
	} `json:"interfaces"`
	ProgramID uint32 `json:"program_id"`
	Counters  []struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		Packets uint64 `json:"packets"`
		Bytes   uint64 `json:"bytes"`
	} `json:"counters"`
	Maps *struct {
		Links        uint32 `json:"links"`
		LinksMax     uint32 `json:"links_max"`
		LinksRefused uint64 `json:"links_refused"`
		Ratelimit    uint32 `json:"ratelimit_entries"`
		RatelimitMax uint32 `json:"ratelimit_max"`
		MapErrors    uint64 `json:"map_errors"`
		LastError    string `json:"last_error"`
	} `json:"maps"`
}

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
		return usageError{usage}
	}
	if asJSON {
		return query(e, "show_bpf", nil)
	}
	data, err := ctl.Call(context.Background(), e.socket, "show_bpf", nil)
	var ce *ctl.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s. %s", ce.Error(), ce.Hint())
	}
	if err != nil {
		return err
	}
	var s bpfStats
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("invalid response JSON: %v", err)
	}
	return printBPF(e.stdout, &s)
}

// printBPF renders show_bpf as tables.
func printBPF(w io.Writer, s *bpfStats) error {
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
	if m := s.Maps; m != nil {
		fmt.Fprintf(&b, "\nmaps: links %d/%d (refused %d), ratelimit %d/%d, link map write errors %d\n",
			m.Links, m.LinksMax, m.LinksRefused, m.Ratelimit, m.RatelimitMax, m.MapErrors)
		if m.LastError != "" {
			fmt.Fprintf(&b, "last map error: %s\n", m.LastError)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
