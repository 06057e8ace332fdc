#!/bin/sh
# Remove what install.sh installed. The configuration, identity and logs
# stay unless --purge is given. Group fips is removed with --purge.
set -eu

PLIST=/Library/LaunchDaemons/com.fips.daemon.plist
[ "$(id -u)" -eq 0 ] || { echo "uninstall.sh: run as root (sudo $0)" >&2; exit 1; }

launchctl bootout system/com.fips.daemon 2>/dev/null || true
rm -f "$PLIST" /usr/local/bin/fips /usr/local/bin/fipsctl /usr/local/bin/fipstop /etc/resolver/fips
dscacheutil -flushcache 2>/dev/null || true
if [ "${1:-}" = --purge ]; then
    rm -rf /usr/local/etc/fips /usr/local/var/log/fips
    dseditgroup -o delete fips 2>/dev/null || true
    echo "fips removed with its configuration, identity and logs"
else
    echo "fips removed; /usr/local/etc/fips and /usr/local/var/log/fips kept (uninstall.sh --purge removes them)"
fi
