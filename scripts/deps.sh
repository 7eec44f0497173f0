#!/usr/bin/env bash
# Installs the Debian packages chring needs to build, test and benchmark,
# only those that are missing. Safe to run again; needs root (or sudo).
set -euo pipefail

packages=(
  meson ninja-build g++ pkg-config python3          # build
  libboost-dev libssl-dev libxxhash-dev             # core and plugins
  libcmocka-dev libbenchmark-dev libmemcached-dev   # tests, benchmarks, reference
  libcli11-dev nlohmann-json3-dev                   # the chring CLI
  golang-go cargo luajit2                           # bindings (OpenResty's LuaJIT: the one nginx-lua uses)
  nginx nginx-dev libnginx-mod-http-lua wrk         # nginx module, OpenResty-style Lua
  nutcracker                                        # twemproxy, for tests/compat
  clang libclang-rt-14-dev                          # libFuzzer harnesses, the clang ASan build
  etcd-server etcd-client python3-etcd3             # a real etcd for the membership tests
  libcurl4-openssl-dev                              # the etcd v3 JSON gateway client
  curl                                              # etcd-acks: a watcher's --confirm asks nginx
  abigail-tools                                     # abidw/abidiff: the ABI against abi/libchring.abi
  debhelper dpkg-dev lintian luarocks               # packages for each ecosystem
  g++-mingw-w64-x86-64-posix mingw-w64-tools wine64 # the Windows build (docs/windows.md), run under Wine
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
