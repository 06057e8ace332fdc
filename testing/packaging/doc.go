// Package packaging tests what `make deb` ships (cmd/fips/packaging/): two
// builds from one commit are byte-identical, lintian and systemd-analyze
// find nothing, the package installs on this machine, its binaries run, the
// daemon starts from the installed configuration in a network namespace and
// answers fipsctl and .fips DNS through dnsmasq as fips-dns-setup set it
// up, and dpkg -r then -P leave the machine as it was. It also tests
// fips-dns-setup and fips-dns-teardown for every resolver backend against a
// temporary root.
//
// TestTarball does the same for the systemd tarball (`make tarball`) and
// its install.sh and uninstall.sh, on this machine; TestWindowsZip builds
// the Windows ZIP twice and checks what it holds. The generator of the man
// pages and the ZIP writer are in mkpkg, with their own tests.
//
// The tests need root, dpkg, lintian, systemd-analyze (Debian's systemd
// package), iproute2, nftables, dnsmasq and dig; a missing tool fails the
// test rather than skipping it (sudo make deps installs them).
package packaging
