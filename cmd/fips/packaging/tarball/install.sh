#!/bin/sh
# Install fips-go from this tarball on a systemd host that is not Debian
# (on Debian and Ubuntu use the .deb).
#
#   sudo ./install.sh [--prefix DIR]      (default prefix: /usr/local)
#
# Commands go to PREFIX/bin, man pages to PREFIX/share/man/man1, the DNS
# helpers and uninstall.sh to PREFIX/lib/fips, units to /etc/systemd/system
# (fips.service and fips-dns.service enabled, fips-firewall.service not),
# /etc/tmpfiles.d/fips.conf, and upstream's default configuration to
# /etc/fips. An existing fips.yaml, hosts or fips.nft is kept; when ours
# differs it is written next to it as NAME.template. Running it again
# upgrades in place and restarts units that were running.
#
# Everything it creates (files, directories, group fips) is listed in
# /var/lib/fips/install.manifest; uninstall.sh removes exactly that.
set -eu

HERE="$(cd "$(dirname "$0")" && pwd)"
PREFIX=/usr/local
ETC=/etc/fips
UNITDIR=/etc/systemd/system
STATE=/var/lib/fips
MANIFEST="$STATE/install.manifest"
ENABLE="fips.service fips-dns.service"
UNITS="fips.service fips-dns.service fips-firewall.service fips-gateway.service"

die() { echo "install.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX="$2"; shift 2 ;;
    --prefix=*) PREFIX="${1#--prefix=}"; shift ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (--prefix DIR)" ;;
    esac
done
case "$PREFIX" in
/*) ;;
*) die "--prefix must be an absolute path" ;;
esac
case "$PREFIX" in
*[!A-Za-z0-9/._-]*) die "--prefix may hold only letters, digits and / . _ -" ;;
esac
PREFIX="${PREFIX%/}"
LIBDIR="$PREFIX/lib/fips"

[ "$(id -u)" -eq 0 ] || die "run as root (sudo $0)"
[ -x "$HERE/bin/fips" ] || die "no $HERE/bin/fips: run install.sh from the unpacked tarball"
command -v systemctl >/dev/null 2>&1 || die "systemctl not found: this tarball is for systemd hosts"
command -v getent >/dev/null 2>&1 && command -v groupadd >/dev/null 2>&1 || die "needs getent and groupadd"
if command -v dpkg-query >/dev/null 2>&1 &&
    [ "$(dpkg-query -W -f '${db:Status-Status}' fips 2>/dev/null || true)" = installed ]; then
    die "the fips .deb is installed: its units would be shadowed; remove it first (dpkg -r fips)"
fi
[ -e /dev/net/tun ] || echo "install.sh: warning: no /dev/net/tun (modprobe tun); fips0 needs it" >&2

booted=false
[ -d /run/systemd/system ] && booted=true

new="$(mktemp)"
# The manifest is written however the script ends, so that uninstall.sh
# can undo a half-finished install too. One line per record, first
# occurrence first (parents before children).
finish() {
    if [ -d "$STATE" ]; then
        awk '!seen[$0]++' "$new" > "$MANIFEST"
        chmod 0644 "$MANIFEST"
    fi
    rm -f "$new" "$new.unit"
}
trap finish EXIT
# An earlier install's records of what it created stay ours.
if [ -f "$MANIFEST" ]; then
    grep -E '^(dir|group|conf|file) ' "$MANIFEST" >> "$new" || true
fi

# mkdirs DIR: create DIR and missing parents, recording each, parents first.
mkdirs() {
    d="$1" missing=""
    while [ ! -d "$d" ]; do
        missing="$d $missing"
        d="$(dirname "$d")"
    done
    for m in $missing; do
        mkdir -m 0755 "$m"
        echo "dir $m" >> "$new"
    done
}

# put MODE SRC DST: install one file and record it.
put() {
    mkdirs "$(dirname "$3")"
    install -m "$1" "$2" "$3"
    echo "file $3" >> "$new"
}

# conf MODE SRC DST: a configuration file, kept when it exists.
conf() {
    mkdirs "$(dirname "$3")"
    if [ ! -e "$3" ]; then
        install -m "$1" "$2" "$3"
        echo "conf $3" >> "$new"
    elif ! cmp -s "$2" "$3"; then
        put "$1" "$2" "$3.template"
        echo "install.sh: kept your $3; the shipped one is $3.template"
    fi
}

# Stop what runs before replacing it; started again at the end.
running=""
if $booted; then
    for u in $UNITS; do
        if systemctl is-active --quiet "$u"; then
            running="$running $u"
        fi
    done
    [ -z "$running" ] || systemctl stop $running
fi

mkdirs "$STATE"
if ! getent group fips >/dev/null; then
    groupadd --system fips
    echo "group fips" >> "$new"
fi

for b in "$HERE"/bin/*; do
    put 0755 "$b" "$PREFIX/bin/${b##*/}"
done
for m in "$HERE"/man/*.1; do
    [ -e "$m" ] || continue
    put 0644 "$m" "$PREFIX/share/man/man1/${m##*/}"
done
put 0755 "$HERE/lib/fips-dns-setup" "$LIBDIR/fips-dns-setup"
put 0755 "$HERE/lib/fips-dns-teardown" "$LIBDIR/fips-dns-teardown"
put 0755 "$HERE/uninstall.sh" "$LIBDIR/uninstall.sh"

# The units name /usr/bin and /usr/lib/fips, as the .deb installs them,
# and the .deb's README. man(1) finds the pages under /usr and /usr/local
# only; elsewhere the unit names the file.
case "$PREFIX" in
/usr | /usr/local) doc="man:fips(1)" ;;
*) doc="file://$PREFIX/share/man/man1/fips.1" ;;
esac
for u in $UNITS; do
    sed -e "s|/usr/bin/|$PREFIX/bin/|g" -e "s|/usr/lib/fips/|$LIBDIR/|g" \
        -e "s|^Documentation=file:///usr/share/doc/fips/README.md|Documentation=$doc|" \
        "$HERE/systemd/$u" > "$new.unit"
    put 0644 "$new.unit" "$UNITDIR/$u"
done
put 0644 "$HERE/systemd/fips.tmpfiles" /etc/tmpfiles.d/fips.conf

conf 0600 "$HERE/etc/fips.yaml" "$ETC/fips.yaml"
conf 0644 "$HERE/etc/hosts" "$ETC/hosts"
conf 0644 "$HERE/etc/fips.nft" "$ETC/fips.nft"
mkdirs "$ETC/fips.d"

if $booted; then
    systemctl daemon-reload
fi
# systemctl enable works without systemd running (it makes the symlinks).
wants="$UNITDIR/multi-user.target.wants"
[ -d "$wants" ] || echo "dir $wants" >> "$new"
systemctl --quiet enable $ENABLE
if command -v systemd-tmpfiles >/dev/null 2>&1; then
    systemd-tmpfiles --create /etc/tmpfiles.d/fips.conf || true
fi
[ -z "$running" ] || systemctl start $running

cat <<EOF
fips installed: commands in $PREFIX/bin, configuration in $ETC/fips.yaml.
Edit $ETC/fips.yaml (peers, node.identity.persistent), then:
  systemctl start fips              (fips-dns follows it)
  systemctl enable --now fips-firewall.service   (optional: default-deny on fips0)
  systemctl enable --now fips-gateway.service    (optional: LAN gateway, gateway: in fips.yaml)
  fipsctl show status
Members of group fips may use fipsctl: usermod -aG fips USER
Remove with: $LIBDIR/uninstall.sh [--purge]
EOF
