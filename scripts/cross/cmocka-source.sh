#!/usr/bin/env bash
# Fetches and unpacks Debian's cmocka source package for the Windows build
# (tests/windows/cmocka cross-builds cmocka from it: MinGW has no cmocka
# package). Usage: cmocka-source.sh DIR; prints the unpacked tree's path
# (DIR/cmocka). Uses `apt-get source` with a private apt state under DIR
# (a deb-src entry for the machine's Debian release, checked with the
# Debian archive keyring), so the system's apt configuration is not
# touched and no root is needed. Does nothing if DIR/cmocka is there.
set -euo pipefail
dir=$(mkdir -p "$1" && cd "$1" && pwd)
tree=$dir/cmocka
if [ -f "$tree/src/cmocka.c" ]; then echo "$tree"; exit 0; fi

. /etc/os-release
suite=${VERSION_CODENAME:-bookworm}
apt=$dir/apt
rm -rf "$apt" "$tree"
mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/download"
cat >"$apt/parts/debian-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/parts"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1"
      -o "APT::Sandbox::User=$(id -un)")
apt-get "${opts[@]}" -qq update >&2
(cd "$apt/download" && apt-get "${opts[@]}" -qq source --download-only cmocka >&2)
dpkg-source --no-check -x "$apt/download"/cmocka_*.dsc "$tree" >&2
echo "$tree"
