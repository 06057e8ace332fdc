#!/bin/sh
# Install fips-go on macOS as the com.fips.daemon LaunchDaemon.
# Run from a directory holding the darwin fips and fipsctl (and fipstop)
# binaries and this packaging directory's files:  sudo ./install.sh [BINDIR]
# An existing /usr/local/etc/fips/fips.yaml or hosts is kept. Running it
# again updates the binaries and reloads the job.
set -eu

HERE="$(cd "$(dirname "$0")" && pwd)"
BINDIR="${1:-$HERE}"
PLIST=/Library/LaunchDaemons/com.fips.daemon.plist
ETC=/usr/local/etc/fips
LOG=/usr/local/var/log/fips

[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root (sudo $0)" >&2; exit 1; }

for b in fips fipsctl; do
    [ -x "$BINDIR/$b" ] || { echo "install.sh: no $BINDIR/$b (GOOS=darwin go build ./cmd/$b)" >&2; exit 1; }
done
# fipstop too when it was built (fips-gateway is Linux only).
for b in fips fipsctl fipstop; do
    [ -x "$BINDIR/$b" ] || continue
    install -m 0755 "$BINDIR/$b" "/usr/local/bin/$b"
done
mkdir -p "$ETC" "$ETC/fips.d" "$LOG"
[ -e "$ETC/fips.yaml" ] || install -m 0600 "$HERE/../etc/fips.yaml" "$ETC/fips.yaml"
[ -e "$ETC/hosts" ] || install -m 0644 "$HERE/../etc/hosts" "$ETC/hosts"

# Group fips may use the control socket (/var/run/fips/control.sock).
if ! dscl . -read /Groups/fips >/dev/null 2>&1; then
    dseditgroup -o create -r "FIPS control socket" fips
fi

# .fips names go to the daemon's responder on [::1]:5354.
mkdir -p /etc/resolver
printf 'nameserver ::1\nport 5354\n' > /etc/resolver/fips

install -m 0644 "$HERE/com.fips.daemon.plist" "$PLIST"
launchctl bootout system/com.fips.daemon 2>/dev/null || true
launchctl bootstrap system "$PLIST"
echo "fips installed; logs in $LOG/fips.log, configuration in $ETC/fips.yaml"
