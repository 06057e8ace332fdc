#!/bin/sh
# Remove what install.sh installed, as /var/lib/fips/install.manifest
# lists it:
#
#   sudo uninstall.sh [--purge]
#
# Without --purge the configuration install.sh wrote (/etc/fips/fips.yaml,
# hosts, fips.nft), the identity the daemon wrote (fips.key, fips.pub) and
# group fips stay, and the manifest keeps recording them for a later
# --purge. With --purge they go too. Files install.sh did not create are
# never removed; a directory goes only when it is empty. Resolver files
# fips-dns-setup wrote (they carry its marker line) are removed either way.
set -eu

STATE=/var/lib/fips
MANIFEST="$STATE/install.manifest"
UNITS="fips-gateway.service fips-firewall.service fips-dns.service fips.service"
MARK="# managed by fips-dns-setup (fips.service); fips-dns-teardown removes it"

die() { echo "uninstall.sh: $*" >&2; exit 1; }
purge=false
case "${1:-}" in
"") ;;
--purge) purge=true ;;
-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) die "unknown argument $1 (--purge)" ;;
esac
[ "$(id -u)" -eq 0 ] || die "run as root (sudo $0)"
[ -f "$MANIFEST" ] || die "no $MANIFEST: nothing installed by install.sh"

if [ -d /run/systemd/system ]; then
    # fips-dns.service's stop runs fips-dns-teardown.
    systemctl stop $UNITS 2>/dev/null || true
fi
if command -v systemctl >/dev/null 2>&1; then
    systemctl --quiet disable $UNITS 2>/dev/null || true
fi

for f in /etc/systemd/dns-delegate.d/fips.dns-delegate /etc/systemd/resolved.conf.d/fips.conf \
    /etc/dnsmasq.d/fips.conf /etc/NetworkManager/dnsmasq.d/fips.conf; do
    if [ -f "$f" ] && grep -qF "$MARK" "$f"; then
        rm -f "$f"
    fi
done
rm -f /run/fips/dns-backend
rmdir /run/fips 2>/dev/null || true

keep="$(mktemp)"
trap 'rm -f "$keep"' EXIT
while read -r kind path; do
    case "$kind" in
    file) rm -f "$path" ;;
    conf)
        if $purge; then rm -f "$path"; else echo "conf $path" >> "$keep"; fi
        ;;
    esac
done < "$MANIFEST"
if $purge; then
    rm -f /etc/fips/fips.key /etc/fips/fips.pub
fi

# Directories, children before parents (the manifest lists parents
# first); one still holding files stays, and stays recorded.
dirs="$(awk '$1 == "dir" { print $2 }' "$MANIFEST" | sort -r)"
group=false
grep -qx 'group fips' "$MANIFEST" && group=true
rm -f "$MANIFEST"
for d in $dirs; do
    rmdir "$d" 2>/dev/null || echo "dir $d" >> "$keep"
done

if $group; then
    if $purge; then
        groupdel fips 2>/dev/null || echo "uninstall.sh: could not remove group fips (still in use?)" >&2
    else
        echo "group fips" >> "$keep"
    fi
fi

if [ -s "$keep" ]; then
    # What stays, for a later uninstall.sh --purge (parents first again).
    if printf '%s\n' $dirs | grep -qx "$STATE"; then
        echo "dir $STATE" >> "$keep"
    fi
    mkdir -p "$STATE"
    sort -u "$keep" | awk '$1 == "dir"' | sort -k2 > "$MANIFEST"
    grep -v '^dir ' "$keep" >> "$MANIFEST" || true
    echo "fips removed; configuration in /etc/fips and group fips kept (uninstall.sh --purge removes them)"
else
    echo "fips removed"
fi
