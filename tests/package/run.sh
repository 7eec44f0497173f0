#!/usr/bin/env bash
# Installs the Debian packages that scripts/package.sh built, checks them as
# a new user would, and removes them again:
#
#   tests/package/run.sh DEB_DIR
#
# Installed with apt-get (dependencies from Debian), then, with no variable
# of this environment (env -i: PATH, and a HOME of its own for go's cache):
#   - the README's C quick start builds with its own command (pkg-config)
#     and prints what the README shows; the same program linked with
#     libchring.a runs without libchring.so.1;
#   - chring runs and finds the installed hash plugins; `man chring` and
#     `man 3 chring` exist; the bash completion completes a command;
#   - nginx loads the module through /etc/nginx/modules-enabled (the
#     snippet the package's postinst enabled), `nginx -t` passes, and
#     requests reach the backend `chring lookup` predicts;
#   - `luajit -e 'require "chring"'` works, as does a lookup through it and
#     require "resty.chring";
#   - a Go program (the README's statements) builds against
#     /usr/share/gocode/src/chring through `replace` and prints the same.
# Then the packages are purged and nothing of theirs may be left: no file
# `dpkg -L` listed, no directory that was not there before the install, no
# modules-enabled link. The packages are purged on every exit, failed or
# not. Needs root; exits 77 (skipped) without it. Prints one line per check
# and ends with "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
debdir=$(realpath "${1:?usage: $0 DEB_DIR}")
packages=(libchring1 libchring-dev chring libnginx-mod-http-upstream-chring lua-chring golang-chring-dev)

if [ "$(id -u)" -ne 0 ]; then
    echo "package test: needs root (installs packages); skipped"
    exit 77
fi

passed=0 failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
check() {  # check "what" command...: passes when the command succeeds
    local what=$1; shift
    if "$@" >"$work/out" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/    /' "$work/out" | tail -20; fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/chring-package-test.XXXXXX")
nginx_pid=
purge() {
    local installed=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$' && installed+=("$p")
    done
    [ ${#installed[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive dpkg --purge "${installed[@]}" >"$work/purge.log" 2>&1
}
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    purge
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# A clean machine: packages of an earlier, interrupted run go first.
purge

debs=()
for p in "${packages[@]}"; do
    deb=$(ls "$debdir/${p}_"*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || { fail "no ${p}_*.deb in $debdir"; echo "$passed passed, $failed failed"; exit 1; }
    debs+=("$deb")
done

# What the packages hold, and which of those paths exist before the install.
for deb in "${debs[@]}"; do
    dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||' | grep -v '^\.\?$'
done | sort -u >"$work/contents"
while read -r path; do [ -e "$path" ] || [ -L "$path" ] && echo "$path"; done <"$work/contents" >"$work/existed"

if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" >"$work/install.log" 2>&1; then
    pass "apt-get install ${packages[*]}"
else
    fail "apt-get install"; tail -30 "$work/install.log"
    echo "$passed passed, $failed failed"; exit 1
fi
for p in "${packages[@]}"; do dpkg -L "$p"; done | grep -vx '/\.' | sort -u >"$work/listed"

home=$work/home
mkdir -p "$home"
run() { (cd "$work" && env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" "$@"); }

# --- C: the README's quick start, with the README's command ---------------
python3 "$here/readme_snippets.py" "$repo/README.md" c >"$work/quickstart.c"
cmd=$(python3 "$here/readme_snippets.py" "$repo/README.md" c-cmd)
want=$(python3 "$here/readme_snippets.py" "$repo/README.md" c-out)
check "C quick start: $cmd prints '$want'" \
    run sh -c "$cmd | grep -qxF '$want'"
check "C quick start linked with libchring.a runs without libchring.so.1" \
    run sh -c 'cc quickstart.c $(pkg-config --cflags chring) -Wl,-Bstatic -lchring -Wl,-Bdynamic -lstdc++ -ldl -pthread -o static \
        && ! ldd ./static | grep -q libchring && ./static | grep -qxF "'"$want"'"'

# --- the tool, its manual pages and completion ----------------------------
check "chring lookup runs (default hasher)" \
    run sh -c 'chring lookup --node cache-a --node cache-b=2 user:42 | grep -q cache-'
check "chring finds the installed plugins (--hasher md5, murmur3_32)" \
    run sh -c 'chring lookup --hasher md5 --node a --node b k && chring lookup --hasher murmur3_32 --node a --node b k'
check "man chring (section 1) exists" run sh -c 'man -w chring | grep -q man1/chring.1'
check "man 3 chring exists" run man -w 3 chring
check "bash completion completes 'chring loo'" \
    run bash -c '. /usr/share/bash-completion/completions/chring; COMP_WORDS=(chring loo); COMP_CWORD=1; _chring; [ "${COMPREPLY[*]}" = lookup ]'

# --- nginx: the module through modules-enabled ----------------------------
read -r port b1 b2 < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
mkdir -p "$work/nginx/logs"
cat >"$work/nginx/nginx.conf" <<CONF
include /etc/nginx/modules-enabled/*.conf;
worker_processes 1;
error_log $work/nginx/logs/error.log notice;
pid $work/nginx/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    upstream backends {
        chring \$request_uri;
        server 127.0.0.1:$b1;
        server 127.0.0.1:$b2 weight=2;
    }
    server { listen 127.0.0.1:$port; location / { proxy_pass http://backends; } }
    server { listen 127.0.0.1:$b1; location / { return 200 "127.0.0.1:$b1\n"; } }
    server { listen 127.0.0.1:$b2; location / { return 200 "127.0.0.1:$b2\n"; } }
}
CONF
check "modules-enabled has the module's snippet" \
    grep -q 'ngx_http_upstream_chring_module.so' /etc/nginx/modules-enabled/50-mod-http-upstream-chring.conf
check "nginx -t with the module loaded through modules-enabled" \
    run nginx -t -c "$work/nginx/nginx.conf"
run nginx -c "$work/nginx/nginx.conf" -g 'daemon off;' >"$work/nginx/stdout" 2>&1 &
nginx_pid=$!
keys=$(seq -f '/k%g' 1 40)
# shellcheck disable=SC2086
run chring lookup --node "127.0.0.1:$b1" --node "127.0.0.1:$b2=2" --no-header --format csv -- $keys >"$work/predicted" 2>&1
routed() {
    python3 - "$port" "$work/predicted" <<'PY'
import sys, time, urllib.request
port, predicted = sys.argv[1], sys.argv[2]
want = dict(line.strip().split(",", 1) for line in open(predicted) if line.strip())
for _ in range(100):  # nginx starting: up to 10 s
    try:
        urllib.request.urlopen("http://127.0.0.1:%s/k1" % port, timeout=2).read()
        break
    except OSError:
        time.sleep(0.1)
wrong = 0
for key, owner in want.items():
    got = urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, key), timeout=5).read().decode().strip()
    wrong += got != owner
owners = set(want.values())
print("%d keys, %d owners, %d differ from chring lookup" % (len(want), len(owners), wrong))
sys.exit(0 if len(want) == 40 and len(owners) == 2 and wrong == 0 else 1)
PY
}
check "nginx routes 40 keys to the backends chring lookup predicts" routed
kill "$nginx_pid" 2>/dev/null; wait "$nginx_pid" 2>/dev/null; nginx_pid=

# --- Lua ------------------------------------------------------------------
check "luajit -e 'require \"chring\"'" run luajit -e 'require "chring"'
check "Lua: a lookup through lua-chring and require \"resty.chring\"" \
    run luajit -e '
        local chring = require "chring"
        assert(require("resty.chring") == chring)
        local ring = assert(chring.new())
        assert(ring:add("cache-a", 1)); assert(ring:add("cache-b", 2))
        local owner = ring:lookup("user:42")
        assert(owner == "cache-b" or (type(owner) == "table" and owner.id == "cache-b"), tostring(owner))'

# --- Go -------------------------------------------------------------------
mkdir -p "$work/goapp"
cat >"$work/goapp/go.mod" <<'MOD'
module goapp

go 1.19

require chring v0.0.0

replace chring => /usr/share/gocode/src/chring
MOD
{
    printf 'package main\n\nimport (\n\t"chring"\n\t"fmt"\n\t"log"\n)\n\nfunc main() {\n'
    python3 "$here/readme_snippets.py" "$repo/README.md" go
    printf '}\n'
} >"$work/goapp/main.go"
check "Go: the README's program builds against /usr/share/gocode/src/chring and prints cache-b" \
    run sh -c 'cd goapp && go build -o app . && ./app | grep -qx cache-b'

# --- removal: nothing left behind -----------------------------------------
purge
leftover=0
while read -r path; do
    [ -e "$path" ] || [ -L "$path" ] || continue
    grep -qxF "$path" "$work/existed" && continue
    echo "    left behind: $path"; leftover=$((leftover + 1))
done < <(sort -u "$work/listed" "$work/contents")
for path in /etc/nginx/modules-enabled/50-mod-http-upstream-chring.conf{,.removed}; do
    [ -e "$path" ] || [ -L "$path" ] && { echo "    left behind: $path"; leftover=$((leftover + 1)); }
done
remaining=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$' && remaining+=("$p")
done
if [ "$leftover" -eq 0 ] && [ ${#remaining[@]} -eq 0 ]; then
    pass "dpkg --purge leaves no file, directory or link of the packages ($(wc -l <"$work/listed") paths listed)"
else
    fail "purge: $leftover paths left behind, packages still known: ${remaining[*]:-none}"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
