#!/bin/sh
# dh_auto_test's quick check of a package build (debian/rules):
#   build-check.sh BUILD_DIR
# the built chring tool routes keys with the built library, and Debian's
# nginx loads the built module and accepts a chring upstream (`nginx -t`:
# the module's signature matches the nginx binary). The suites themselves
# run from scripts/test.sh.
set -eu
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

out=$("$build/src/cli/chring" lookup --node cache-a --node cache-b=2 user:42)
echo "build-check: chring lookup: $out"
case $out in *cache-a*|*cache-b*) ;; *) echo "build-check: no owner in: $out" >&2; exit 1 ;; esac

module=$(pwd)/$build/bindings/nginx/install/ngx_http_upstream_chring_module.so
cat >"$work/nginx.conf" <<CONF
load_module $module;
events {}
http {
    upstream backends {
        chring \$request_uri;
        server 127.0.0.1:1;
        server 127.0.0.1:2 weight=2;
    }
}
CONF
LD_LIBRARY_PATH=$(pwd)/$build/src /usr/sbin/nginx -q -t -p "$work" -c "$work/nginx.conf" \
    -g "error_log stderr; pid $work/nginx.pid;"
echo "build-check: nginx -t accepts the module"
