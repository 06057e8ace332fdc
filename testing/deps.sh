#!/usr/bin/env bash
# testing/deps.sh: the one list of what fips-go's tests, demo and bench
# need from outside Go, and the step that installs it. `make deps`, `make
# test`, `make demo`, `make bench` and .ci/run all call it.
#
#   testing/deps.sh [GROUP...]     GROUP: unit root test demo bench profile interop (none: all)
#
#   unit   tests any user can run (make test-unprivileged)
#   root   the privileged suites: network namespaces, BPF, a package install
#   test   unit and root (make test)
#   demo   make demo
#   bench  make bench
#   profile make bench-profile
#   interop make interop (with FIPS_UPSTREAM)
#
# It installs only what is missing (apt-get on Debian and Ubuntu, one line
# per package saying why; the Nostr relay's npm modules with npm ci, pinned
# by their lockfile) and prints nothing when nothing is. When it cannot
# install, it prints one line and exits 1: not root, the package archive
# or the npm registry unreachable, or another distribution (the line then
# names the Debian packages, to find their equivalents). Go itself is not
# installed here: README, "Build and test".
#
# DEPS_OS_RELEASE names another os-release file (default /etc/os-release).
set -euo pipefail
cd "$(dirname "$0")/.."

# command  Debian package  groups  why
table=$(
	cat <<'EOF'
gcc              gcc           unit                             go test -race builds with cgo
git              git           unit                             the Makefile, the reports and testing/packaging read the commit
promtool         prometheus    unit                             lints the /metrics exposition and the Grafana dashboard queries (control/metrics, testing/netns)
zsh              zsh           unit                             runs fipsctl's zsh completion script (cmd/fipsctl)
man              man-db        unit                             checks the generated man pages for groff warnings (testing/packaging/mkpkg)
jq               jq            unit                             runs upstream's documented jq one-liners on live nodes (testing/daemons, testing/netns)
ip               iproute2      root,demo,bench,profile,interop  makes the network namespaces, veths and routes (ip, ss, nstat, tc)
sysctl           procps        root,bench,profile,interop       turns on forwarding in the namespace routers
ping             iputils-ping  root,demo,bench,profile,interop  pings nodes across the mesh
dig              dnsutils      root,demo,bench,profile,interop  resolves <npub>.fips names
nft              nftables      root,demo,bench,profile,interop  redirects DNS to the node, NATs, fips-gateway and the firewall unit
iperf3           iperf3        root,demo,bench,profile,interop  measures throughput across the mesh
curl             curl          root,interop                     fetches /metrics and HTTP through the mesh (testing/netns)
python3          python3       root,interop                     HTTP servers, paced UDP senders and sinks in the namespaces (testing/netns)
ethtool          ethtool       root,bench,profile               turns veths' segmentation offloads off (TestEngineMMPLoss, the bench's wire-like underlay)
tmux             tmux          root                             drives fipstop with send-keys and capture-pane (testing/netns)
turnserver       coturn        root                             the STUN server of the NAT scenarios (testing/netns)
node             nodejs        unit,root                        runs the post-quantum KAT check (testing/pqkat) and the Nostr relay of the NAT scenarios (testing/netns)
npm              npm           unit,root                        installs their npm modules from their lockfiles
g++              g++           root                             builds the relay's SQLite store
make             make          root                             testing/packaging runs make deb and make tarball
dpkg-deb         dpkg          root                             testing/packaging inspects, installs and purges the .deb
lintian          lintian       root                             lints the .deb (testing/packaging)
systemd-analyze  systemd       root                             verifies the systemd units (testing/packaging)
dnsmasq          dnsmasq-base  root                             the dnsmasq DNS backend end to end (testing/packaging)
tor              tor           root                             the private Tor network of the Tor transport's end-to-end test (testing/netns/tornet; tor-gencert comes with it)
perf             linux-perf    profile                          samples the daemons' call chains (make bench-profile)
EOF
)
relay=testing/netns/nostrrelay

fail() {
	echo "deps: $*" >&2
	exit 1
}

# first prints the first line of file $2 that matches $1, trimmed, or
# else its last line.
first() {
	sed -n -E "/$1/{s/^[[:space:]]+//;p;q}" "$2" | grep . || tail -1 "$2"
}

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(unit root demo bench profile interop)
want=()
for g in "${groups[@]}"; do
	case $g in
	test) want+=(unit root) ;;
	unit | root | demo | bench | profile | interop) want+=("$g") ;;
	*) fail "unknown group $g (unit, root, test, demo, bench, profile, interop)" ;;
	esac
done

command -v go >/dev/null 2>&1 ||
	fail "go is not on PATH: install Go $(sed -n 's/^go //p' go.mod) (README, Build and test)"

# What is missing, as commands, Debian packages and one reason each.
cmds=() pkgs=() whys=()
while read -r cmd pkg grp why; do
	[ -n "$cmd" ] || continue
	for g in "${want[@]}"; do
		case ",$grp," in *",$g,"*) ;; *) continue ;; esac
		command -v "$cmd" >/dev/null 2>&1 && break
		case " ${pkgs[*]} " in *" $pkg "*) break ;; esac
		cmds+=("$cmd") pkgs+=("$pkg") whys+=("$why")
		break
	done
done <<<"$table"

if [ ${#pkgs[@]} -gt 0 ]; then
	os=${DEPS_OS_RELEASE:-/etc/os-release}
	os_id=$(sed -n 's/^ID\(_LIKE\)\{0,1\}=//p' "$os" 2>/dev/null | tr -d "\"'" | tr '\n' ' ' || true)
	os_id=${os_id% }
	case " $os_id " in
	*" debian "* | *" ubuntu "*) ;;
	*) fail "missing ${cmds[*]}; $os says ${os_id:-nothing known}, not Debian or Ubuntu: install what provides them (Debian packages: ${pkgs[*]}) and run again" ;;
	esac
	[ "$(id -u)" = 0 ] ||
		fail "missing ${cmds[*]} (Debian packages ${pkgs[*]}); installing them needs root: sudo make deps"

	for i in "${!pkgs[@]}"; do
		echo "deps: installing ${pkgs[i]} (${cmds[i]}): ${whys[i]}"
	done
	log=$(mktemp /tmp/fips-deps.XXXXXX)
	export DEBIAN_FRONTEND=noninteractive
	apt=(apt-get -q -o DPkg::Lock::Timeout=300)
	unreachable='Temporary failure resolving|Could not resolve|Could not connect|Unable to connect|Network is unreachable|Connection timed out|No route to host'
	# Output goes to the log and nothing may ask: no terminal for apt.
	if ! "${apt[@]}" update </dev/null >"$log" 2>&1; then
		fail "apt-get update failed: $(first '^(E|Err):' "$log") (log: $log)"
	fi
	if ! "${apt[@]}" install -y "${pkgs[@]}" </dev/null >>"$log" 2>&1; then
		if grep -qE "$unreachable" "$log"; then
			fail "cannot reach the package archive: $(first "$unreachable" "$log") (log: $log)"
		fi
		fail "apt-get install ${pkgs[*]} failed: $(first '^E:' "$log") (log: $log)"
	fi
	for c in "${cmds[@]}"; do
		command -v "$c" >/dev/null 2>&1 || fail "installed ${pkgs[*]}, but $c is still not on PATH ($PATH)"
	done
	rm -f "$log"
fi

# The independent check of the post-quantum upgrade's vectors
# (@noble/post-quantum, @noble/hashes), pinned by its lockfile; npm ci
# again only when the lockfile changed.
pqkat=testing/pqkat
case " ${want[*]} " in *" unit "*)
	if [ ! -f $pqkat/node_modules/.package-lock.json ] || [ $pqkat/package-lock.json -nt $pqkat/node_modules/.package-lock.json ]; then
		echo "deps: installing testing/pqkat's npm modules (npm ci, pinned by $pqkat/package-lock.json): control/session's TestPQKATIndependent runs them"
		log=$(mktemp /tmp/fips-deps.XXXXXX)
		if ! npm ci --prefix $pqkat --no-audit --no-fund </dev/null >"$log" 2>&1; then
			grep -qE 'code (EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH)' "$log" &&
				fail "cannot reach the npm registry: $(first '^npm (ERR!|error) (code|request|network)' "$log") (log: $log)"
			fail "npm ci in $pqkat failed: $(first '^npm (ERR!|error)' "$log") (log: $log)"
		fi
		rm -f "$log"
	fi
	;;
esac

# The relay the NAT scenarios run (@nostr-relay), pinned by its lockfile;
# npm ci again only when the lockfile changed.
case " ${want[*]} " in *" root "*)
	if [ ! -f $relay/node_modules/.package-lock.json ] || [ $relay/package-lock.json -nt $relay/node_modules/.package-lock.json ]; then
		echo "deps: installing the Nostr relay's npm modules (npm ci, pinned by $relay/package-lock.json): the NAT scenarios run it (testing/netns)"
		log=$(mktemp /tmp/fips-deps.XXXXXX)
		if ! npm ci --prefix $relay --no-audit --no-fund </dev/null >"$log" 2>&1; then
			grep -qE 'code (EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH)' "$log" &&
				fail "cannot reach the npm registry: $(first '^npm (ERR!|error) (code|request|network)' "$log") (log: $log)"
			fail "npm ci in $relay failed: $(first '^npm (ERR!|error)' "$log") (log: $log)"
		fi
		rm -f "$log"
	fi
	;;
esac
