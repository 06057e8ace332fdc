package main

import (
	"fmt"
	"strings"

	"github.com/fips-go/fips/control/history"
)

// Shell completion (fips-go addition): `fipsctl completion bash|zsh`
// prints a script generated from the same tables the commands parse
// with, so a new subcommand or flag completes without editing shell.

// compArg is what a positional argument completes to.
type compArg struct {
	words []string // fixed candidates
	hosts bool     // names from the hosts file
}

// compCmd is one command (or subcommand) of the completion tree.
type compCmd struct {
	name    string
	summary string
	subs    []compCmd // subcommands, when the first argument picks one
	args    []compArg // positionals, when there are no subcommands
	flags   []compFlag
}

// compFlag is a flag and what its value completes to (nil: no value).
type compFlag struct {
	names []string
	value *compValue
}

type compValue struct {
	words []string
	file  bool // a path
	dir   bool // a directory
	hosts bool
}

var (
	peerArg      = compArg{hosts: true}
	windowFlag   = compFlag{[]string{"--window"}, &compValue{words: []string{"1m", "10m", "1h", "24h"}}}
	granFlag     = compFlag{[]string{"--granularity"}, &compValue{words: []string{"1s", "1m"}}}
	peerFlag     = compFlag{[]string{"--peer"}, &compValue{hosts: true}}
	plotFlag     = compFlag{names: []string{"--plot"}}
	helpFlag     = compFlag{names: []string{"-h", "--help"}}
	globalFlags  = []compFlag{{[]string{"-s", "--socket"}, &compValue{file: true}}, {names: []string{"-V", "--version"}}, helpFlag}
	transportArg = compArg{words: []string{"udp", "tcp", "tor", "nym", "ethernet"}}
)

// metricNames are every history metric, node and peer, once each.
func metricNames(peerOnly bool) []string {
	var out []string
	seen := map[string]bool{}
	if !peerOnly {
		for _, m := range history.Metrics() {
			out, seen[m.Name()] = append(out, m.Name()), true
		}
	}
	for _, m := range history.PeerMetrics() {
		if !seen[m.Name()] {
			out, seen[m.Name()] = append(out, m.Name()), true
		}
	}
	return out
}

// completionTree is fipsctl's commands as completion sees them.
func completionTree() []compCmd {
	summaries := map[string]string{}
	for _, c := range commands() {
		summaries[c.name] = c.summary
	}
	stats := []compCmd{
		{name: "list", summary: "history metrics and their units (show_stats_list)"},
		{name: "metrics", summary: "every counter family (show_metrics)"},
		{name: "peers", summary: "peers tracked in the history (show_stats_peers)"},
		{name: "history", summary: "one metric's time series (show_stats_history)",
			args:  []compArg{{words: metricNames(false)}},
			flags: []compFlag{peerFlag, windowFlag, granFlag, plotFlag}},
		{name: "all-history", summary: "every node or peer series (show_stats_all_history)",
			flags: []compFlag{peerFlag, windowFlag, granFlag, plotFlag}},
		{name: "history-all-peers", summary: "one peer metric across peers (show_stats_history_all_peers)",
			args:  []compArg{{words: metricNames(true)}},
			flags: []compFlag{windowFlag, granFlag, plotFlag}},
	}
	show := make([]compCmd, 0, len(showTargets))
	for _, t := range showTargets {
		show = append(show, compCmd{name: t, summary: "show_" + strings.ReplaceAll(t, "-", "_")})
	}
	tree := []compCmd{
		{name: "keygen", flags: []compFlag{{[]string{"-d", "--dir"}, &compValue{dir: true}},
			{names: []string{"-f", "--force"}}, {names: []string{"-s", "--stdout"}}}},
		{name: "identity", flags: []compFlag{{names: []string{"--pubkey"}}}},
		{name: "wire", subs: []compCmd{{name: "decode", summary: "dissect a FIPS packet",
			flags: []compFlag{{[]string{"--layer"}, &compValue{words: []string{"fmp", "fsp"}}},
				{[]string{"--inner"}, &compValue{words: []string{"fmp", "fsp"}}}}}}},
		{name: "show", subs: show},
		{name: "acl", subs: []compCmd{{name: "show", summary: "show_acl"}}},
		{name: "connect", args: []compArg{peerArg, {}, transportArg}},
		{name: "disconnect", args: []compArg{peerArg}},
		{name: "stats", subs: stats},
		{name: "bpf", subs: []compCmd{{name: "stats", summary: "show_bpf", flags: []compFlag{{names: []string{"--json"}}}}}},
		{name: "probe", args: []compArg{peerArg}, flags: []compFlag{{names: []string{"--json"}}, {[]string{"--timeout"}, &compValue{}}}},
		{name: "completion", subs: []compCmd{{name: "bash", summary: "bash completion script"}, {name: "zsh", summary: "zsh completion script"}}},
	}
	for i := range tree {
		tree[i].summary = summaries[tree[i].name]
	}
	return tree
}

func runCompletion(e *env, args []string) error {
	const syn = "completion <bash|zsh>"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(e.stdout, "usage: fipsctl %s\n\nbash: source <(fipsctl completion bash), or save it as\n"+
			"  /usr/share/bash-completion/completions/fipsctl\nzsh: fipsctl completion zsh > \"${fpath[1]}/_fipsctl\"\n", syn)
		return nil
	}
	if len(args) != 1 {
		return usageError{msg: "a shell is required", usage: syn}
	}
	switch args[0] {
	case "bash":
		_, err := fmt.Fprint(e.stdout, bashCompletion(completionTree()))
		return err
	case "zsh":
		_, err := fmt.Fprint(e.stdout, zshCompletion(completionTree()))
		return err
	}
	return usageError{msg: fmt.Sprintf("unrecognized subcommand '%s'", args[0]), usage: syn}
}

func flagNames(fs []compFlag) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.names...)
	}
	return out
}

func subNames(cs []compCmd) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// valueFlags collects every flag taking a value below (and including)
// cmds, with what the value completes to; a name used twice must agree.
func valueFlags(cmds []compCmd, into map[string]*compValue, order *[]string) {
	for _, c := range cmds {
		for _, f := range c.flags {
			if f.value == nil {
				continue
			}
			for _, n := range f.names {
				if _, ok := into[n]; !ok {
					*order = append(*order, n)
				}
				into[n] = f.value
			}
		}
		valueFlags(c.subs, into, order)
	}
}

const hostsAwk = `awk '!/^[[:space:]]*#/ && NF == 2 && tolower($1) !~ /^npub1/ {print $1}'`

// valuedFlags are the flags below the command that take a value, as a
// shell case pattern (-s is the socket only before the command).
func valuedFlags(tree []compCmd) string {
	vals, order := map[string]*compValue{}, []string{}
	valueFlags(tree, vals, &order)
	var out []string
	for _, n := range order {
		if n != "-s" && n != "--socket" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "|")
}

func bashCompletion(tree []compCmd) string {
	valued := valuedFlags(tree)
	var b strings.Builder
	b.WriteString(`# bash completion for fipsctl; generated by "fipsctl completion bash".
# Install: source <(fipsctl completion bash), or save as
# /usr/share/bash-completion/completions/fipsctl.

_fipsctl_hosts() {
    local f="${FIPS_ETC_DIR:-/etc/fips}/hosts"
    [ -r "$f" ] && ` + hostsAwk + ` "$f"
}

_fipsctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local -a pos=()
    local i=1 w
    # The positional words before the cursor; -s/--socket before the
    # command takes a value (keygen's -s does not).
    while [ "$i" -lt "$COMP_CWORD" ]; do
        w="${COMP_WORDS[i]}"
        case "$w" in
            -s|--socket) [ "${#pos[@]}" -eq 0 ] && i=$((i + 1)) ;;
            ` + valued + `) i=$((i + 1)) ;;
            -*) ;;
            *) pos+=("$w") ;;
        esac
        i=$((i + 1))
    done
    COMPREPLY=()
    if [ "${#pos[@]}" -eq 0 ]; then
        case "$prev" in
            -s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        esac
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "` + strings.Join(flagNames(globalFlags), " ") + `" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "` + strings.Join(append(subNames(tree), "help"), " ") + `" -- "$cur"))
        fi
        return 0
    fi
    case "$prev" in
`)
	vals, order := map[string]*compValue{}, []string{}
	valueFlags(tree, vals, &order)
	for _, n := range order {
		if n == "-s" {
			continue // only before the command, handled above
		}
		v := vals[n]
		fmt.Fprintf(&b, "        %s) ", n)
		switch {
		case v.dir:
			b.WriteString(`COMPREPLY=($(compgen -d -- "$cur"))`)
		case v.file:
			b.WriteString(`COMPREPLY=($(compgen -f -- "$cur"))`)
		case v.hosts:
			b.WriteString(`COMPREPLY=($(compgen -W "$(_fipsctl_hosts)" -- "$cur"))`)
		case len(v.words) > 0:
			fmt.Fprintf(&b, `COMPREPLY=($(compgen -W "%s" -- "$cur"))`, strings.Join(v.words, " "))
		default: // a value nothing can guess
			b.WriteString("COMPREPLY=()")
		}
		b.WriteString("; return 0 ;;\n")
	}
	b.WriteString("    esac\n")
	bashCases(&b, tree, 0, "    ")
	b.WriteString("    return 0\n}\n\ncomplete -F _fipsctl fipsctl\n")
	return b.String()
}

// bashCases writes the case on pos[depth] choosing among cmds.
func bashCases(b *strings.Builder, cmds []compCmd, depth int, ind string) {
	fmt.Fprintf(b, "%scase \"${pos[%d]}\" in\n", ind, depth)
	for _, c := range cmds {
		fmt.Fprintf(b, "%s    %s)\n", ind, c.name)
		in := ind + "        "
		// k: positionals typed after this command.
		fmt.Fprintf(b, "%slocal k=$((${#pos[@]} - %d))\n", in, depth+1)
		fl := strings.Join(flagNames(append(c.flags, helpFlag)), " ")
		if len(c.subs) > 0 {
			// The subcommand's own flags once it is chosen.
			fmt.Fprintf(b, "%sif [ \"$k\" -eq 0 ]; then\n", in)
			fmt.Fprintf(b, "%s    if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return 0; fi\n", in, fl)
			fmt.Fprintf(b, "%s    COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return 0\n%sfi\n", in, strings.Join(subNames(c.subs), " "), in)
			bashCases(b, c.subs, depth+1, in)
		} else {
			fmt.Fprintf(b, "%sif [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return 0; fi\n", in, fl)
		}
		for k, a := range c.args {
			switch {
			case a.hosts:
				fmt.Fprintf(b, "%s[ \"$k\" -eq %d ] && COMPREPLY=($(compgen -W \"$(_fipsctl_hosts)\" -- \"$cur\"))\n", in, k)
			case len(a.words) > 0:
				fmt.Fprintf(b, "%s[ \"$k\" -eq %d ] && COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n", in, k, strings.Join(a.words, " "))
			}
		}
		fmt.Fprintf(b, "%s;;\n", in)
	}
	fmt.Fprintf(b, "%sesac\n", ind)
}

// zshQuote quotes s for a zsh single-quoted word.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func zshDescribe(b *strings.Builder, ind, what string, cmds []compCmd) {
	fmt.Fprintf(b, "%slocal -a cands\n%scands=(", ind, ind)
	for i, c := range cmds {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(zshQuote(strings.ReplaceAll(c.name, ":", `\:`) + ":" + c.summary))
	}
	fmt.Fprintf(b, ")\n%s_describe -t commands %s cands\n", ind, zshQuote(what))
}

func zshCompletion(tree []compCmd) string {
	valued := valuedFlags(tree)
	var b strings.Builder
	b.WriteString(`#compdef fipsctl
# zsh completion for fipsctl; generated by "fipsctl completion zsh".
# Install: fipsctl completion zsh > "${fpath[1]}/_fipsctl", then compinit.

_fipsctl_hosts() {
    local f="${FIPS_ETC_DIR:-/etc/fips}/hosts"
    [[ -r $f ]] && ` + hostsAwk + ` "$f"
}

_fipsctl() {
    local -a pos
    local i=2 w
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    while (( i < CURRENT )); do
        w=${words[i]}
        case $w in
            (-s|--socket) (( ${#pos} == 0 )) && (( i++ )) ;;
            (` + valued + `) (( i++ )) ;;
            (-*) ;;
            (*) pos+=("$w") ;;
        esac
        (( i++ ))
    done
    if (( ${#pos} == 0 )); then
        case $prev in
            (-s|--socket) _files; return ;;
        esac
        if [[ $cur == -* ]]; then
            compadd -- ` + strings.Join(flagNames(globalFlags), " ") + `
            return
        fi
`)
	zshDescribe(&b, "        ", "fipsctl command", append(tree, compCmd{name: "help", summary: "print usage"}))
	b.WriteString("        return\n    fi\n    case $prev in\n")
	vals, order := map[string]*compValue{}, []string{}
	valueFlags(tree, vals, &order)
	for _, n := range order {
		if n == "-s" {
			continue
		}
		v := vals[n]
		fmt.Fprintf(&b, "        (%s) ", n)
		switch {
		case v.dir:
			b.WriteString("_files -/")
		case v.file:
			b.WriteString("_files")
		case v.hosts:
			b.WriteString("compadd -- ${(f)\"$(_fipsctl_hosts)\"}")
		case len(v.words) > 0:
			b.WriteString("compadd -- " + strings.Join(v.words, " "))
		default:
			b.WriteString(":")
		}
		b.WriteString("; return ;;\n")
	}
	b.WriteString("    esac\n")
	zshCases(&b, tree, 1, "    ")
	b.WriteString("}\n\n_fipsctl \"$@\"\n")
	return b.String()
}

// zshCases writes the case on pos[depth] (1-based) choosing among cmds.
func zshCases(b *strings.Builder, cmds []compCmd, depth int, ind string) {
	fmt.Fprintf(b, "%scase ${pos[%d]} in\n", ind, depth)
	for _, c := range cmds {
		fmt.Fprintf(b, "%s    (%s)\n", ind, c.name)
		in := ind + "        "
		fmt.Fprintf(b, "%slocal k=$(( ${#pos} - %d ))\n", in, depth)
		fl := strings.Join(flagNames(append(c.flags, helpFlag)), " ")
		if len(c.subs) > 0 {
			fmt.Fprintf(b, "%sif (( k == 0 )); then\n", in)
			fmt.Fprintf(b, "%s    if [[ $cur == -* ]]; then compadd -- %s; return; fi\n", in, fl)
			zshDescribe(b, in+"    ", c.name+" subcommand", c.subs)
			fmt.Fprintf(b, "%s    return\n%sfi\n", in, in)
			zshCases(b, c.subs, depth+1, in)
		} else {
			fmt.Fprintf(b, "%sif [[ $cur == -* ]]; then compadd -- %s; return; fi\n", in, fl)
		}
		for k, a := range c.args {
			switch {
			case a.hosts:
				fmt.Fprintf(b, "%s(( k == %d )) && compadd -- ${(f)\"$(_fipsctl_hosts)\"}\n", in, k)
			case len(a.words) > 0:
				fmt.Fprintf(b, "%s(( k == %d )) && compadd -- %s\n", in, k, strings.Join(a.words, " "))
			}
		}
		fmt.Fprintf(b, "%s;;\n", in)
	}
	fmt.Fprintf(b, "%sesac\n", ind)
}
