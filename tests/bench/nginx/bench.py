#!/usr/bin/env python3
"""Requests/s through chring balancers vs nginx's `hash $request_uri consistent;`.

    bench.py --build BUILD_DIR [--seconds 5] [--rounds 2] [--threads 2] [--connections 50]

One balancer nginx listens once per balancer, all over the same loopback
backends (nginx `server` blocks answering their address); wrk sends
distinct URIs (the key is $request_uri) for a fixed time to each in turn,
round after round, so that drifts of the machine hit every balancer alike.
With and without upstream keepalive. The OpenResty example
(balancer_by_lua) runs in its own nginx when libnginx-mod-http-lua is
installed. Prints a Markdown report: the machine, the command, requests/s
and the balancer worker's CPU time per request for each balancer (medians
of the rounds) and their ratios to the builtin hash.
Not a pass/fail test.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# The e2e tests' nginx harness, beside the module.
sys.path.insert(0, os.path.join(SOURCE_ROOT, "bindings", "nginx", "tests"))
import harness  # noqa: E402
from test_e2e import LuaFlavor, ModuleFlavor, Server, Upstream  # noqa: E402

LUA_MODULES = "/usr/lib/nginx/modules"

# Distinct URIs: each wrk thread numbers its own requests.
WRK_SCRIPT = """
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("tid", threads)
end
function init(args)
    n = 0
end
function request()
    n = n + 1
    return wrk.format("GET", "/item/" .. tid .. "-" .. n)
end
"""

# mode -> (upstream tail, location directives)
KEEPALIVE = {
    "no upstream keepalive": ("", ""),
    "upstream keepalive 32": ("keepalive 32;",
                              "proxy_http_version 1.1; proxy_set_header Connection \"\";"),
}


def wrk(port, args, script):
    out = subprocess.run(
        ["wrk", "-t%d" % args.threads, "-c%d" % args.connections, "-d%ds" % args.seconds,
         "-s", script, "http://127.0.0.1:%d/" % port],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True).stdout.decode()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors or "Socket errors" in out:
        raise RuntimeError("wrk saw errors on port %d:\n%s" % (port, out))
    return rps, requests


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    nginx_v = subprocess.run(["nginx", "-v"], stderr=subprocess.PIPE).stderr.decode().strip()
    return "%s, %d CPUs, Linux %s, %s, wrk 4.1" % (cpu, os.cpu_count(), platform.release(),
                                                  nginx_v.replace("nginx version: ", ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(SOURCE_ROOT, "build"))
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--backends", type=int, default=4)
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)

    module = os.path.join(args.build, "bindings", "nginx", "ngx_http_upstream_chring_module.so")
    libchring = os.path.join(args.build, "src", "libchring.so")
    if not os.path.exists(module):
        sys.exit("bench: %s missing: build with ninja -C %s first" % (module, args.build))
    with_lua = os.path.exists(os.path.join(LUA_MODULES, "ngx_http_lua_module.so"))

    with harness.Workspace("nginx") as ws:
        script = os.path.join(ws.root, "uris.lua")
        with open(script, "w") as f:
            f.write(WRK_SCRIPT)
        backends = harness.Backends(ws, args.backends)
        backends.start()
        servers = [Server(i) for i in backends.ids]

        # name -> (nginx instance, port, upstream, flavor)
        balancers = {}
        ports = harness.free_ports(4)
        flavor = ModuleFlavor(argparse.Namespace(module=module))
        module_listeners = [
            (ports[0], Upstream("builtin", servers, builtin="hash $request_uri consistent;")),
            (ports[1], Upstream("chring", servers, options={"tokens": 160, "hash": "xxh3"})),
            (ports[2], Upstream("chring_nginx", servers, options={"placement": "nginx"})),
        ]
        instances = [(flavor, module_listeners, ws.nginx("balancer", workers=1,
                                                         modules=[module]))]
        if with_lua:
            lua = LuaFlavor(argparse.Namespace(
                ndk_module=os.path.join(LUA_MODULES, "ndk_http_module.so"),
                lua_module=os.path.join(LUA_MODULES, "ngx_http_lua_module.so"),
                lua_path=[os.path.join(SOURCE_ROOT, "bindings", "lua", "lib"),
                          os.path.join(SOURCE_ROOT, "bindings", "nginx", "openresty")],
                chring_lib=libchring))
            lua_listeners = [(ports[3], Upstream("chring_lua", servers,
                                                 options={"tokens": 160, "hash": "xxh3"}))]
            instances.append((lua, lua_listeners, ws.nginx(
                "balancer-lua", workers=1, modules=lua.modules,
                env={"CHRING_LIB": libchring})))

        labels = {"builtin": "nginx `hash $request_uri consistent;`",
                  "chring": "chring module, `chring $request_uri tokens=160 hash=xxh3;`",
                  "chring_nginx": "chring module, `placement=nginx`",
                  "chring_lua": "OpenResty example (balancer_by_lua, Lua binding)"}
        results = {}
        for mode, (tail, location) in KEEPALIVE.items():
            for fl, listeners, inst in instances:
                for _, u in listeners:
                    u.tail = tail
                body = fl.render(listeners, location)
                if inst.process is None:
                    inst.start(body)
                else:
                    inst.reload(body)
                for port, u in listeners:
                    balancers[u.name] = (port, inst)
            for name, (port, _) in balancers.items():  # warm-up, not counted
                subprocess.run(["wrk", "-t1", "-c10", "-d1s", "-s", script,
                                "http://127.0.0.1:%d/" % port], stdout=subprocess.DEVNULL)
            for r in range(args.rounds):
                for name, (port, inst) in balancers.items():
                    cpu_before = inst.worker_cpu_seconds()
                    rps, requests = wrk(port, args, script)
                    cpu_us = 1e6 * (inst.worker_cpu_seconds() - cpu_before) / requests
                    results.setdefault((mode, name), []).append((rps, cpu_us))
                    print("  %s, round %d, %s: %.0f req/s, %.1f us CPU/request"
                          % (mode, r + 1, name, rps, cpu_us), file=sys.stderr)
        bad = [l for i in ws.instances for l in i.bad_log_lines()]
        if bad:
            sys.exit("bench: nginx logged trouble:\n" + "\n".join(bad))

    print("Machine: %s." % machine())
    print("Command: `bash tests/bench/nginx/bench.sh %s` (wrk -t%d -c%d -d%ds per run, %d rounds, "
          "%d backends, one balancer worker, one backend worker)."
          % (os.path.relpath(args.build, SOURCE_ROOT), args.threads, args.connections,
             args.seconds, args.rounds, args.backends))
    print("Requests/s is wall-clock throughput of the whole loopback setup (wrk, balancer "
          "and backends share the CPUs); CPU/request is the balancer worker's user+system "
          "time divided by the requests it served, which other load on the machine "
          "disturbs far less.")

    def median(mode, name, field):
        return statistics.median(run[field] for run in results[(mode, name)])

    for mode in KEEPALIVE:
        print("\n%s:\n" % mode.capitalize())
        print("| balancer | requests/s (median) | ratio | balancer CPU/request (median) "
              "| ratio | runs (req/s) |")
        print("|---|---:|---:|---:|---:|---|")
        base_rps, base_cpu = median(mode, "builtin", 0), median(mode, "builtin", 1)
        for name in balancers:
            rps, cpu = median(mode, name, 0), median(mode, name, 1)
            runs = ", ".join("%.0f" % run[0] for run in results[(mode, name)])
            print("| %s | %.0f | %.3f | %.1f us | %.3f | %s |"
                  % (labels[name], rps, rps / base_rps, cpu, cpu / base_cpu, runs))
        print("\nratio chring / builtin (%s): requests/s %.3f, CPU per request %.3f"
              % (mode, median(mode, "chring", 0) / base_rps, median(mode, "chring", 1) / base_cpu))


if __name__ == "__main__":
    main()
