#!/usr/bin/env python3
"""End-to-end tests of chring balancing inside a real nginx.

    test_e2e.py --flavor module --module MODULE.so ...   the C upstream module
    test_e2e.py --flavor lua --lua-path DIRS ...          the OpenResty example

Backends are nginx `server` blocks on free loopback ports answering their
own `server` text; the balancer is a second nginx with either the chring
upstream module (`chring $request_uri ...;`) or OpenResty's
balancer_by_lua_block running bindings/nginx/openresty/chring_balancer.lua
on the Lua binding. Every routing check compares what nginx did with what
the C API says (bindings/nginx/tests/chring_predict) for the same membership and
options, key by key. Cases:

  routing    every key reaches the predicted backend, twice, in two orders;
             shares follow the weights; other ring options and keys
  down       `down` + reload: only that backend's keys move, spread over
             the survivors; removing `down` brings every key back
  stop       a stopped backend (connection refused, max_fails): same as
             down, at run time; restarted, its keys come back
  tries      a failed try goes to the key's next replica, at most
             proxy_next_upstream_tries in all
  compat     placement=nginx routes as nginx's `hash ... consistent`,
             also with a `down` and a stopped server
  wide       34 servers, 33 stopped: past the 32 replicas examined, any
             available server
  backup     (module) `backup` servers take over, by their own ring, when
             every primary fails
  badconfig  (module) bad configurations fail `nginx -t` with a clear
             message and exit status 1, never a crash
  zones      (module) `replicas=zones-first` with the ring file's zones:
             with one zone's servers stopped, every key is answered within
             2 tries, by the replica the C API predicts (with
             `replicas=nodes` some keys, both first replicas in that zone,
             get 502)
  balance    (module) `balance=1.25` with a shared zone over 2 workers, one
             slowed backend: every backend's peak in flight within the
             cap (without the bound the hot key's home exceeds it); a
             `down` backend gets nothing and its keys come back
  ringfile   (module) `chring ... file=`: 20 rewrites of the ring file
             (adds, removes, reweights, an id no server has, bad files)
             under a steady stream of requests; each worker follows every
             good file (it re-checks it every second; the test waits for
             that, bounded, and asserts no time), keeps the last good ring
             on a bad one,
             logs each load and each bad file once, and reports the ring's
             $chring_fingerprint and $chring_revision
  fallback   (module) `file=` missing: without `fallback=` nginx -t fails
             saying so; with it nginx starts from the fallback (routing,
             variables, a warning naming both files), then both workers
             follow the primary once it is written; `nginx -s` still
             signals with the file missing
  availability  (module) a ring file's `%%down` lines: a member marked
             down gets no request (nor a retry), its keys go to the next
             replica of their walk (also when that one is stopped), the
             others stay; removing the line brings every key back;
             three of four down is panic (every key as unmarked, a
             warning); $chring_availability, $chring_down and the notice
             logged on each change
  access     (module, as root only: skipped otherwise) workers running as
             `nobody`: a ring file only root can read, or behind a
             directory only root can search, fails nginx -t naming the
             file and the user; readable, it passes; with `fallback=`
             nginx starts from the fallback and the workers follow the
             primary once they can read it

Statistical bounds (share checks) are 5 standard deviations; each is
derived where it is computed. Ends with "N passed, N failed"; exit status 0
when every check passed.
"""

import argparse
import grp
import http.client
import math
import os
import pwd
import random
import re
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

KEYS = 4000
TOKENS = 160
SIGMAS = 5.0


class Check:
    """Counts checks; each prints one line, failures with details."""

    def __init__(self):
        self.failed = 0
        self.passed = 0

    def __call__(self, condition, what, detail=""):
        if condition:
            self.passed += 1
            print("ok - %s" % what)
        else:
            self.failed += 1
            print("FAIL - %s%s" % (what, ("\n    " + detail) if detail else ""))
        return condition


# -- what a balancer is configured with, in either flavor ---------------------


class Server:
    def __init__(self, server_id, weight=1, down=False, backup=False, max_fails=None,
                 fail_timeout=None):
        self.id = server_id
        self.weight = weight
        self.down = down
        self.backup = backup
        self.max_fails = max_fails
        self.fail_timeout = fail_timeout

    def nginx_parameters(self):
        p = ["weight=%d" % self.weight] if self.weight != 1 else []
        if self.max_fails is not None:
            p.append("max_fails=%d" % self.max_fails)
        if self.fail_timeout is not None:
            p.append("fail_timeout=%ds" % self.fail_timeout)
        p += ["down"] * self.down + ["backup"] * self.backup
        return " ".join(p)


class Key:
    """One key, as an nginx complex value and as a Lua expression."""

    def __init__(self, nginx, lua):
        self.nginx = nginx
        self.lua = lua


URI_KEY = Key("$request_uri", "ngx.var.request_uri")
USER_KEY = Key('"k:$http_x_user"', '"k:" .. (ngx.var.http_x_user or "")')


class Upstream:
    """A chring upstream (options: tokens, hash, seed, placement) or, with
    `builtin`, one balanced by that nginx directive instead. `tail`: more
    directives at the end of the block (e.g. keepalive)."""

    def __init__(self, name, servers, key=URI_KEY, options=None, builtin=None, tail=""):
        self.name = name
        self.servers = servers
        self.key = key
        self.options = options or {}
        self.builtin = builtin
        self.tail = tail

    def members(self, backup=False):
        """(id, weight) of the ring the C API should build: `down` is weight 0."""
        return [(s.id, 0 if s.down else s.weight) for s in self.servers if s.backup == backup]

    def predict_options(self):
        o = self.options
        args = []
        for name, flag in (("tokens", "--tokens"), ("hash", "--hash"), ("seed", "--seed"),
                           ("placement", "--placement")):
            if name in o:
                args += [flag, str(o[name])]
        return args


def server_block(port, upstream, location_extra):
    return """
  server {
    listen 127.0.0.1:%d;
    location / {
      proxy_pass http://%s;
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
      %s
    }
  }""" % (port, upstream.name, location_extra)


def upstream_block(u, directive, servers):
    return "\n  upstream %s {\n    %s\n%s\n    %s\n  }" % (u.name, directive, servers, u.tail)


def server_lines(u):
    return "\n".join("    server %s %s;" % (s.id, s.nginx_parameters()) for s in u.servers)


class ModuleFlavor:
    """The chring upstream module: `chring KEY tokens=.. hash=..;` in the upstream."""

    name = "module"
    cases = ("routing", "down", "stop", "tries", "compat", "wide", "backup", "badconfig",
             "ringfile", "zones", "balance", "fallback", "access", "availability")

    def __init__(self, args):
        self.module = os.path.abspath(args.module)

    def instance(self, ws, **kwargs):
        return ws.nginx("balancer", modules=[self.module], **kwargs)

    def render(self, listeners, location_extra=""):
        body = []
        for port, u in listeners:
            if u.builtin:
                body.append(upstream_block(u, u.builtin, server_lines(u)))
            else:
                params = " ".join("%s=%s" % kv for kv in sorted(u.options.items()))
                body.append(upstream_block(u, "chring %s %s;" % (u.key.nginx, params),
                                           server_lines(u)))
            body.append(server_block(port, u, location_extra))
        return "\n".join(body)


class LuaFlavor:
    """OpenResty: balancer_by_lua_block with bindings/nginx/openresty/chring_balancer.lua."""

    name = "lua"
    cases = ("routing", "down", "stop", "tries", "compat", "wide")
    lua_options = {"tokens": "tokens_per_weight", "hash": "hasher", "seed": "seed",
                   "placement": "placement"}

    def __init__(self, args):
        self.modules = [args.ndk_module, args.lua_module]
        self.lua_path = args.lua_path
        self.chring_lib = os.path.abspath(args.chring_lib)

    def instance(self, ws):
        # init_by_lua runs in the master, which keeps this environment
        return ws.nginx("balancer", modules=self.modules, env={"CHRING_LIB": self.chring_lib})

    @staticmethod
    def lua_string(s):
        return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')

    def ring_table(self, u):
        servers = []
        for s in u.servers:
            if s.backup:
                raise ValueError("the OpenResty example has no backup tier")
            fields = [self.lua_string(s.id)]
            if s.weight != 1:
                fields.append("weight = %d" % s.weight)
            if s.down:
                fields.append("down = true")
            servers.append("{ %s }" % ", ".join(fields))
        ring = ", ".join("%s = %s" % (self.lua_options[k], self.lua_string(v) if isinstance(v, str)
                                      else v) for k, v in sorted(u.options.items()))
        # nginx's max_fails=0 turns failure memory off; else max_fails=1 semantics
        no_memory = all(s.max_fails == 0 for s in u.servers)
        fail_timeout = 0 if no_memory else (u.servers[0].fail_timeout or 10)
        return "assert(chring_balancer.new({ %s }, { ring = { %s }, fail_timeout = %d }))" % (
            ", ".join(servers), ring, fail_timeout)

    def render(self, listeners, location_extra=""):
        rings = ["      chring_rings[%s] = %s" % (self.lua_string(u.name), self.ring_table(u))
                 for _, u in listeners if not u.builtin]
        body = ['  lua_package_path "%s;;";' % ";".join(d + "/?.lua" for d in self.lua_path),
                "  init_by_lua_block {",
                '      local chring_balancer = require "chring_balancer"',
                "      chring_rings = {}"] + rings + ["  }"]
        for port, u in listeners:
            if u.builtin:
                body.append(upstream_block(u, u.builtin, server_lines(u)))
            else:
                body.append(upstream_block(
                    u, "balancer_by_lua_block { chring_rings[%s]:balance(%s) }"
                    % (self.lua_string(u.name), u.key.lua), "    server 0.0.0.1;"))
            body.append(server_block(port, u, location_extra))
        return "\n".join(body)


# -- checks -----------------------------------------------------------------


def keys_for(case, count=KEYS):
    return ["/%s/item-%d" % (case, i) for i in range(count)]


def mismatches(keys, got, want, limit=5):
    bad = [(k, g, w) for k, g, w in zip(keys, got, want) if g != w]
    return len(bad), "; ".join("%s: got %s, want %s" % b for b in bad[:limit])


def shares(values, among):
    counts = {i: 0 for i in among}
    for v in values:
        if v in counts:
            counts[v] += 1
    total = max(1, sum(counts.values()))
    return {i: c / total for i, c in counts.items()}


def check_routing(check, what, keys, got, want):
    n, detail = mismatches(keys, got, want)
    check(n == 0, "%s: %d keys reach the backend the C API predicts (%d differ)"
          % (what, len(keys), n), detail)


def check_spread(check, what, moved_to, survivors, weights, moved_tokens):
    """The keys of a removed node, spread over `survivors`.

    Each run of the removed node's tokens hands its arc to the owner of the
    next token, survivor j with probability q_j = w_j / W_survivors. The
    arcs are near-exponential (Var L = E[L]^2), so the share of survivor j
    among the moved keys has variance about q_j (1 - q_j) (2 / n + 1 / m)
    for n runs (about the node's token count) and m moved keys. Bound:
    q_j + 5 sd for every survivor; at least half the survivors get keys.
    """
    s = shares(moved_to, survivors)
    total_w = sum(weights[i] for i in survivors)
    m = len(moved_to)
    receivers = sum(1 for i in survivors if s[i] > 0)
    worst = max(survivors, key=lambda i: s[i])
    print("    %s: %d moved keys over %d/%d survivors, worst survivor %s has %.1f%%"
          % (what, m, receivers, len(survivors), worst, 100 * s[worst]))
    check(receivers >= max(2, (len(survivors) + 1) // 2),
          "%s: moved keys spread over %d survivors (>= half of %d)"
          % (what, receivers, len(survivors)))
    for i in survivors:
        q = weights[i] / total_w
        bound = q + SIGMAS * math.sqrt(q * (1 - q) * (2.0 / moved_tokens + 1.0 / max(1, m)))
        check(s[i] <= bound, "%s: survivor %s takes %.3f of the moved keys (<= %.3f)"
              % (what, i, s[i], bound))
    return s[worst]


def route_users(port, users):
    """Requests with an X-User header, one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    got = []
    try:
        for u in users:
            conn.request("GET", "/", headers={"X-User": u})
            resp = conn.getresponse()
            body = resp.read().decode()
            got.append(body if resp.status == 200 else "HTTP %d" % resp.status)
    finally:
        conn.close()
    return got


# -- cases ------------------------------------------------------------------


def case_fixture(ctx, case, backend_count, key_count=KEYS):
    """What most cases start from: `backend_count` running backends, a free
    port, a balancer not started yet, and the case's keys."""
    backends = harness.Backends(ctx.ws, backend_count)
    backends.start()
    port = harness.free_ports(1)[0]
    return backends, port, ctx.balancer(), keys_for(case, key_count)


def case_routing(ctx, check):
    """Exact prediction, determinism, shares by weight, ring options."""
    backends, port, lb, keys = case_fixture(ctx, "routing", 5)
    weights = dict(zip(backends.ids, [1, 1, 2, 1, 3]))
    servers = [Server(i, weights[i]) for i in backends.ids]

    ring = Upstream("ring", servers, options={"tokens": TOKENS, "hash": "xxh3"})
    lb.start(ctx.render([(port, ring)]))
    got = harness.route(port, keys)
    want = ctx.predict.owners(ring.members(), keys, ring.predict_options())
    check(all(g in backends.ids for g in got), "every request answered by a backend",
          str([g for g in got if g not in backends.ids][:5]))
    check_routing(check, "tokens=160 hash=xxh3", keys, got, want)

    again = harness.route(port, list(reversed(keys)))[::-1]
    n, detail = mismatches(keys, again, got)
    check(n == 0, "the same key reaches the same backend on a second pass in reverse order "
          "(%d differ)" % n, detail)

    # Shares against the weights. A node with t = 160 w of the T ring tokens
    # owns a Beta(t, T - t) fraction of the circle (spacings of uniform
    # points), variance p (1 - p) / (T + 1) with p = w / W; the K keys add
    # binomial variance p (1 - p) / K. Bound: 5 sd of the sum.
    s = shares(got, backends.ids)
    total_w = sum(weights.values())
    tokens_total = TOKENS * total_w
    owned = ctx.predict.ownership(ring.members(), ring.predict_options())
    for i in backends.ids:
        p = weights[i] / total_w
        bound = SIGMAS * math.sqrt(p * (1 - p) * (1.0 / (tokens_total + 1) + 1.0 / len(keys)))
        check(abs(s[i] - p) <= bound, "weight %d: share %.3f within %.3f of %.3f"
              % (weights[i], s[i], bound, p))
        # Against the ring's exact ownership only the keys' binomial noise is left.
        q = owned[i]
        bound = SIGMAS * math.sqrt(q * (1 - q) / len(keys))
        check(abs(s[i] - q) <= bound, "weight %d: share %.3f within %.3f of the ring's "
              "ownership %.3f" % (weights[i], s[i], bound, q))

    # With the peers in shared memory (`zone`): same routing.
    ring = Upstream("ring", servers, options={"tokens": TOKENS, "hash": "xxh3"},
                    tail="zone ring 64k;")
    lb.reload(ctx.render([(port, ring)]))
    got = harness.route(port, keys)
    n, detail = mismatches(keys, got, want)
    check(n == 0, "with `zone`, every key reaches the same backend (%d differ)" % n, detail)

    # Other options, end to end: a different hasher, token count and seed.
    ring = Upstream("ring", servers, options={"tokens": 40, "hash": "murmur3_32", "seed": 12345})
    lb.reload(ctx.render([(port, ring)]))
    got = harness.route(port, keys)
    want = ctx.predict.owners(ring.members(), keys, ring.predict_options())
    check_routing(check, "tokens=40 hash=murmur3_32 seed=12345", keys, got, want)

    # A key made of a text and a variable (a header), default options.
    ring = Upstream("ring", servers, key=USER_KEY)
    lb.reload(ctx.render([(port, ring)]))
    users = ["user-%d" % i for i in range(1000)]
    got = route_users(port, users)
    want = ctx.predict.owners(ring.members(), ["k:" + u for u in users])
    check_routing(check, "key %s (defaults)" % USER_KEY.nginx, users, got, want)


def case_down(ctx, check):
    """`down` and reload: only its keys move, and come back."""
    backends, port, lb, keys = case_fixture(ctx, "down", 5)
    ids = backends.ids
    weights = {i: 1 for i in ids}

    def ring(down=None):
        return Upstream("ring", [Server(i, down=(i == down)) for i in ids])

    lb.start(ctx.render([(port, ring())]))
    base = harness.route(port, keys)
    check_routing(check, "all up", keys, base, ctx.predict.owners(ring().members(), keys))

    for cycle, victim in enumerate([ids[1], ids[3], ids[1]]):
        lb.reload(ctx.render([(port, ring(down=victim))]))
        got = harness.route(port, keys)
        want = ctx.predict.owners(ring(down=victim).members(), keys)
        check_routing(check, "cycle %d, %s down" % (cycle, victim), keys, got, want)
        stayed = sum(1 for b in base if b != victim)
        unchanged = sum(1 for b, g in zip(base, got) if b != victim and g == b)
        check(unchanged == stayed, "cycle %d: the %d keys of other backends stay (%d did)"
              % (cycle, stayed, unchanged))
        check(victim not in got, "cycle %d: no key reaches the down backend" % cycle)
        moved_to = [g for b, g in zip(base, got) if b == victim]
        check_spread(check, "cycle %d" % cycle, moved_to, [i for i in ids if i != victim],
                     weights, TOKENS)

        lb.reload(ctx.render([(port, ring())]))
        back = harness.route(port, keys)
        n, detail = mismatches(keys, back, base)
        check(n == 0, "cycle %d: `down` removed, every key is back (%d differ)" % (cycle, n),
              detail)


def case_stop(ctx, check):
    """A backend stops (connection refused): its keys go to their next
    replica, the node the ring without it predicts; restarted, they return."""
    backends, port, lb, keys = case_fixture(ctx, "stop", 5)
    ids = backends.ids
    weights = {i: 1 for i in ids}
    fail_timeout = 2
    ring = Upstream("ring", [Server(i, max_fails=1, fail_timeout=fail_timeout) for i in ids])

    lb.start(ctx.render([(port, ring)]))
    base = harness.route(port, keys)
    check_routing(check, "all up", keys, base, ctx.predict.owners(ring.members(), keys))

    victim = ids[2]
    backends.set_alive([i for i in ids if i != victim])
    got = harness.route(port, keys)
    want = ctx.predict.owners([(i, 0 if i == victim else 1) for i in ids], keys)
    check_routing(check, "%s stopped" % victim, keys, got, want)
    unchanged = sum(1 for b, g in zip(base, got) if b != victim and g == b)
    stayed = sum(1 for b in base if b != victim)
    check(unchanged == stayed, "the %d keys of running backends stay (%d did)"
          % (stayed, unchanged))
    moved_to = [g for b, g in zip(base, got) if b == victim]
    check_spread(check, "stopped", moved_to, [i for i in ids if i != victim], weights, TOKENS)

    backends.set_alive(ids)
    time.sleep(fail_timeout + 1)  # past fail_timeout the backend is tried again
    back = harness.route(port, keys)
    n, detail = mismatches(keys, back, base)
    check(n == 0, "restarted: every key is back (%d differ)" % n, detail)


def case_tries(ctx, check):
    """Each failed try moves to the key's next replica, within
    proxy_next_upstream_tries. max_fails=0: a dead backend is tried every
    time, so each request walks its replica list from the start."""
    backends, port, lb, keys = case_fixture(ctx, "tries", 6)
    ids = backends.ids
    ring = Upstream("ring", [Server(i, max_fails=0) for i in ids])
    dead = {ids[0], ids[4]}
    backends.set_alive([i for i in ids if i not in dead])
    replicas = ctx.predict.replicas(ring.members(), keys, 3)

    for tries in (2, 0):
        body = ctx.render([(port, ring)], "proxy_next_upstream error timeout; "
                          "proxy_next_upstream_tries %d;" % tries)
        if lb.process is None:
            lb.start(body)
        else:
            lb.reload(body)
        got = harness.route(port, keys)
        limit = tries or len(ids)
        want = []
        for r in replicas:
            alive = [n for n in r[:limit] if n not in dead]
            want.append(alive[0] if alive else "HTTP 502")
        check_routing(check, "proxy_next_upstream_tries %d, 2 of 6 stopped" % tries,
                      keys, got, want)
        expected_502 = want.count("HTTP 502")
        if tries == 2:
            check(expected_502 > 0, "some keys have both first replicas stopped (%d answer 502)"
                  % expected_502)
        else:
            check(expected_502 == 0, "unlimited tries: every key reaches a running backend")


def case_wide(ctx, check):
    """More servers than the 32 replicas a try examines: when those are all
    unavailable, any available server takes the request."""
    backends, port, lb, keys = case_fixture(ctx, "wide", 34, 600)
    ids = backends.ids
    alive = ids[-1]
    ring = Upstream("ring", [Server(i, max_fails=1, fail_timeout=30) for i in ids])
    replicas = ctx.predict.replicas(ring.members(), keys, 32)
    beyond = sum(1 for r in replicas if alive not in r)
    check(beyond > 0, "%d keys do not have the running server among their 32 first replicas"
          % beyond)

    backends.set_alive([alive])
    lb.start(ctx.render([(port, ring)]))
    got = harness.route(port, keys)
    check(set(got) == {alive}, "33 of 34 stopped: every key reaches the running one",
          str(sorted(set(got))[:5]))


def case_backup(ctx, check):
    """`backup` servers: a ring of their own, used when every primary fails."""
    backends, port, lb, keys = case_fixture(ctx, "backup", 5)
    primaries, backups = backends.ids[:3], backends.ids[3:]
    fail_timeout = 2
    ring = Upstream("ring", [Server(i, max_fails=1, fail_timeout=fail_timeout) for i in primaries]
                    + [Server(i, backup=True) for i in backups])

    lb.start(ctx.render([(port, ring)]))
    base = harness.route(port, keys)
    check_routing(check, "all up: primaries only", keys, base,
                  ctx.predict.owners(ring.members(), keys))

    backends.set_alive(backups)
    got = harness.route(port, keys)
    check_routing(check, "every primary stopped: the backup ring", keys, got,
                  ctx.predict.owners(ring.members(backup=True), keys))
    check(len(set(got)) == len(backups), "both backups take keys")

    backends.set_alive(backups[1:])
    got = harness.route(port, keys)
    check(set(got) == {backups[1]}, "one backup left takes every key", str(set(got)))

    backends.set_alive(backends.ids)
    time.sleep(fail_timeout + 1)
    back = harness.route(port, keys)
    n, detail = mismatches(keys, back, base)
    check(n == 0, "primaries back: every key returns to its primary (%d differ)" % n, detail)


def case_compat(ctx, check):
    """placement=nginx against nginx's own `hash $request_uri consistent`."""
    backends = harness.Backends(ctx.ws, 6)
    backends.start()
    ids = backends.ids
    weights = dict(zip(ids, [1, 2, 1, 3, 1, 2]))
    down = ids[5]
    servers = [Server(i, weights[i], down=(i == down), max_fails=1, fail_timeout=30)
               for i in ids]
    port_hash, port_chring = harness.free_ports(2)
    builtin = Upstream("builtin", servers, builtin="hash $request_uri consistent;")
    ring = Upstream("ring", servers, options={"placement": "nginx"})
    lb = ctx.balancer()
    keys = keys_for("compat")
    lb.start(ctx.render([(port_hash, builtin), (port_chring, ring)]))

    theirs = harness.route(port_hash, keys)
    ours = harness.route(port_chring, keys)
    n, detail = mismatches(keys, ours, theirs)
    check(n == 0, "placement=nginx routes %d keys as `hash ... consistent` (%d differ)"
          % (len(keys), n), detail)
    check_routing(check, "placement=nginx", keys, ours,
                  ctx.predict.owners(ring.members(), keys, ring.predict_options()))

    victim = ids[3]  # the heaviest: most keys to move
    backends.set_alive([i for i in ids if i != victim])
    theirs = harness.route(port_hash, keys)
    ours = harness.route(port_chring, keys)
    n, detail = mismatches(keys, ours, theirs)
    check(n == 0, "with %s stopped, the same fallback as nginx (%d differ)" % (victim, n), detail)
    check(victim not in ours, "no key reaches the stopped backend")


def case_badconfig(ctx, check):
    """`nginx -t` on bad configurations: status 1 and the reason."""
    ids = ["127.0.0.1:%d" % p for p in harness.free_ports(2)]
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    good = [Server(i) for i in ids]

    def upstream(directive, servers=good):
        u = Upstream("ring", servers, builtin=directive)  # the directive verbatim
        return ctx.render([(port, u)])

    status, out = lb.test_config(upstream("chring $request_uri tokens=160 hash=xxh3;"))
    check(status == 0, "a good configuration passes nginx -t", out)

    missing_file = os.path.join(ctx.ws.root, "no-such-ring.txt")
    bad_file = os.path.join(ctx.ws.root, "bad-ring.txt")
    crc_file = os.path.join(ctx.ws.root, "crc-ring.txt")
    with open(bad_file, "w") as f:
        f.write("%s 1\n%s heavy\n" % (ids[0], ids[1]))
    with open(crc_file, "w") as f:
        f.write("%%%%hasher crc32\n%s 1\n" % ids[0])

    # weight errors name the server, its rank among the upstream's `server`
    # directives (nginx keeps no line for them) and the upstream's line,
    # wherever `chring` stands, also from a file included in the block
    included = os.path.join(ctx.ws.root, "servers.conf")
    with open(included, "w") as f:
        f.write("server %s;\nserver %s weight=2000000;\n" % (ids[1], ids[0]))
    third = "127.0.0.1:%d" % harness.free_ports(1)[0]
    for where in ("first", "last", "included"):
        servers = [Server(ids[0]), Server(ids[1], weight=2000000)]
        bad, rank = ids[1], "2nd"
        if where == "first":
            body = upstream("chring $request_uri;", servers)
        elif where == "last":
            body = ctx.render([(port, Upstream("ring", servers, builtin="# servers first",
                                               tail="chring $request_uri;"))])
        else:
            bad, rank = ids[0], "3rd"
            body = ctx.render([(port, Upstream("ring", [Server(third)],
                                               builtin="chring $request_uri;",
                                               tail="include %s;" % included))])
        status, out = lb.test_config(body)
        with open(lb.conf_path) as f:
            line = next(n for n, l in enumerate(f, 1) if "upstream ring {" in l)
        want = "primary server \"%s\", the %s \"server\" of upstream \"ring\" in %s:%d:" % (
            bad, rank, lb.conf_path, line)
        check(status == 1 and want in out and "weight 2000000" in out,
              "a weight over the limit names its server (chring %s): %s" % (where, want),
              out.strip())

    # `chring $request_uri PARAMETERS;` in the good upstream: (what, PARAMETERS, expected)
    parameter_cases = [
        ("unknown hasher", "hash=nosuch", "no hasher named 'nosuch'"),
        ("unknown hasher with plugin_dir", "hash=nosuch plugin_dir=/nonexistent",
         "no hasher named 'nosuch'"),
        ("tokens=0", "tokens=0", "tokens per unit of weight must be 1..65536"),
        ("replicas=nts", "replicas=nts", "the failover order is \"nodes\" or \"zones-first\""),
        ("replicas=racks", "replicas=racks", "invalid \"replicas=racks\""),
        ("tokens not a number", "tokens=lots", "invalid \"tokens=lots\""),
        ("tokens too large", "tokens=70000", "must be 1..65536"),
        ("balance under 1", "balance=0.99", "decimal number from 1.00 to 1000"),
        ("balance with 3 decimals", "balance=1.255", "decimal number from 1.00 to 1000"),
        ("balance not a number", "balance=high", "decimal number from 1.00 to 1000"),
        ("balance twice", "balance=1.25 balance=2", "\"balance\" is given twice"),
        ("balance_slack not a number", "balance_slack=x", "whole number of requests"),
        ("seed overflow", "seed=18446744073709551616", "unsigned 64-bit"),
        ("unknown placement", "placement=ketama", "\"native\" or \"nginx\""),
        ("unknown parameter", "copies=3", "invalid parameter \"copies=3\""),
        ("parameter twice", "hash=xxh3 hash=xxh64", "\"hash\" is given twice"),
        ("tokens with placement=nginx", "placement=nginx tokens=100",
         "no effect with \"placement=nginx\""),
        ("hasher with placement=nginx", "placement=nginx hash=xxh3", "hashes with crc32"),
        ("ring file missing", "file=%s" % missing_file, missing_file),
        ("check= without file=", "check=1s", "\"check=\" needs \"file=\""),
        ("check=0", "file=%s check=0" % bad_file, "invalid \"check=0\""),
        ("a bad ring file", "file=%s" % bad_file, "%s:2: " % bad_file),
        ("a ring file with other options", "file=%s" % crc_file, "%s:" % crc_file),
        ("fallback= without file=", "fallback=%s" % bad_file, "\"fallback=\" needs \"file=\""),
        ("ring file and fallback missing", "file=%s fallback=%s.seed" % (missing_file, missing_file),
         "and the fallback cannot be used either: %s.seed:" % missing_file),
    ]
    cases = [(name, upstream("chring $request_uri %s;" % parameters), expected)
             for name, parameters, expected in parameter_cases]
    cases += [
        ("no key", upstream("chring;"), "invalid number of arguments in \"chring\""),
        ("directive twice", upstream("chring $request_uri;\n    chring $uri;"),
         "\"chring\" directive is duplicate"),
        ("no servers", upstream("chring $request_uri;", servers=[]),
         "no servers are inside upstream"),
        ("only backup servers", upstream("chring $request_uri;",
                                         servers=[Server(i, backup=True) for i in ids]),
         "no servers in upstream"),
        ("weight over chring's limit", upstream(
            "chring $request_uri;", servers=[Server(ids[0], weight=2000000)]),
         "weight 2000000"),
        ("too many tokens", upstream(
            "chring $request_uri tokens=65536;", servers=[Server(ids[0], weight=300)]),
         "chring: primary server \"%s\", the 1st \"server\" of upstream \"ring\"" % ids[0]),
        # 200 x 65536 tokens fit, 100 more pass 2^24: the second is named
        ("the server that passes the token total", upstream(
            "chring $request_uri tokens=65536;",
            servers=[Server(ids[0], weight=200), Server(ids[1], weight=100)]),
         "chring: primary server \"%s\", the 2nd \"server\" of upstream \"ring\"" % ids[1]),
        ("outside an upstream", "  server { listen 127.0.0.1:%d; chring $request_uri; }" % port,
         "\"chring\" directive is not allowed here"),
    ]
    for name, body, expected in cases:
        status, out = lb.test_config(body)
        ok = status == 1 and expected in out and "[emerg]" in out and "test failed" in out
        check(ok, "%s: nginx -t exits 1 with %r" % (name, expected),
              "status %d, output:\n%s" % (status, out.strip()))


# -- ringfile: live membership from a ring file --------------------------------

# How long a check waits for both workers to act on a rewritten file. Each
# re-checks it every second (check=1s) while requests flow, so on an idle
# machine it takes about a second; the bound is only there so that a worker
# that never follows fails the check instead of hanging it. No check asserts
# how soon.
CONVERGE_SECONDS = 60.0


def wait_for(get, done, seconds=CONVERGE_SECONDS):
    """Calls get() until done(value) holds or `seconds` pass; returns the last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = get()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


class Stream:
    """A loopback client in a thread: one request per fresh connection (so
    both workers serve them), random keys, bounded by a count and a
    deadline; counts answers that are not 200."""

    def __init__(self, port, keys, limit=1000000, seconds=240.0):
        self.port, self.keys, self.limit = port, keys, limit
        self.deadline = time.monotonic() + seconds
        self.sent = 0
        self.failures = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        rng = random.Random(16)
        while (not self.stopping.is_set() and self.sent < self.limit
               and time.monotonic() < self.deadline):
            key = rng.choice(self.keys)
            try:
                status, _ = harness.http_get(self.port, key, timeout=10)
                if status != 200:
                    self.failures.append("%s: HTTP %d" % (key, status))
            except OSError as e:
                self.failures.append("%s: %s" % (key, e))
            self.sent += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=30)
        return False


class WorkerConnections:
    """One keep-alive connection to each worker (told apart by X-Worker),
    to send every key to every worker."""

    def __init__(self, port, workers, attempts=200):
        self.port = port
        self.conns = {}
        for _ in range(attempts):
            if len(self.conns) == workers:
                break
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/probe")
            resp = conn.getresponse()
            resp.read()
            pid = resp.getheader("X-Worker")
            if pid in self.conns:
                conn.close()
            else:
                self.conns[pid] = conn
        if len(self.conns) != workers:
            raise RuntimeError("reached %d of %d workers" % (len(self.conns), workers))

    def get(self, pid, path):
        """(body, fingerprint, revision) from worker `pid`; self.refused is
        the answer's ($chring_refused_revision, $chring_refusal), None for
        an empty one."""
        conn = self.conns[pid]
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read().decode()
        self.last = resp  # its other headers
        if resp.getheader("X-Worker") != pid:
            raise RuntimeError("connection of worker %s answered by %s"
                               % (pid, resp.getheader("X-Worker")))
        if resp.status != 200:
            body = "HTTP %d" % resp.status
        self.refused = (resp.getheader("X-Chring-Refused-Revision"),
                        resp.getheader("X-Chring-Refusal"))
        return body, resp.getheader("X-Chring-Fingerprint"), resp.getheader("X-Chring-Revision")

    def close(self):
        for conn in self.conns.values():
            conn.close()


def ringfile_text(revision, members):
    return "%%%%revision %d\n" % revision + "".join("%s %d\n" % m for m in members)


def case_ringfile(ctx, check):
    """`chring $request_uri file=PATH;` followed live by both workers."""
    backends = harness.Backends(ctx.ws, 6)
    backends.start()
    b = backends.ids
    stranger = "127.0.0.1:9"  # in the file, no `server` of the upstream
    servers = set(b)
    port = harness.free_ports(1)[0]
    path = os.path.join(ctx.ws.root, "ring.txt")
    keys = keys_for("ringfile", 200)

    def write(text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)  # readers see the old or the new file

    initial = [(b[0], 1), (b[1], 1), (b[2], 1), (b[3], 1)]  # b[4], b[5]: not members
    write(ringfile_text(1, initial))
    lb = ctx.balancer()
    lb.start("""
  upstream ring {
    chring $request_uri file=%s;
%s
  }""" % (path, "\n".join("    server %s;" % i for i in b)) + followed_server(port, "ring", """
    location = /status {  # no upstream: the named variables
      add_header X-Worker $pid always;
      return 200 "$chring_fingerprint_ring $chring_revision_ring";
    }
    location = /refused {
      add_header X-Worker $pid always;
      return 200 "$chring_refused_revision_ring|$chring_refusal_ring";
    }"""))

    # Good files: (members in file order). Bad files: (text, line, message).
    steps = [
        [(b[0], 1), (b[1], 1), (b[2], 1), (b[3], 1), (b[4], 1)],          # add
        [(b[0], 1), (b[1], 3), (b[2], 1), (b[3], 1), (b[4], 1)],          # reweight
        [(b[1], 3), (b[2], 1), (b[3], 1), (b[4], 1)],                     # remove
        ("%s 1\n%s x\n" % (b[1], b[2]), 3, "weight"),                    # bad weight
        [(b[5], 2), (b[1], 3), (b[2], 1), (b[0], 1), (b[3], 1), (b[4], 1)],
        [(b[5], 2), (b[1], 3), (b[2], 0), (b[0], 1), (b[3], 1), (b[4], 1)],
        [(b[5], 2), (b[1], 3), (b[2], 0), (b[0], 1), (b[4], 1)],
        [(b[5], 2), (b[1], 3), (b[2], 0), (b[0], 1), (b[4], 1), (stranger, 1)],
        [(b[5], 2), (b[1], 3), (b[2], 0), (b[0], 1), (b[4], 2)],
        ("%s 1\n%s 2\n%s 1\n" % (b[0], b[1], b[0]), 4, "duplicate"),     # same id twice
        [(b[5], 2), (b[1], 3), (b[2], 0), (b[0], 1), (b[4], 2), (b[3], 1)],
        [(b[2], 0), (b[0], 1), (b[4], 2), (b[3], 1)],
        [(b[2], 0), (b[0], 5), (b[4], 2), (b[3], 1)],
        [(b[2], 1), (b[0], 5), (b[4], 2), (b[3], 1), (b[1], 1), (b[5], 1)],
        ("%%%%frobnicate 1\n%s 1\n" % b[0], 2, "frobnicate"),            # unknown directive
        [(b[2], 1), (b[0], 5), (b[3], 1), (b[1], 1), (b[5], 1)],
        [(b[2], 1), (b[0], 1), (b[3], 1), (b[1], 1), (b[5], 1)],
        [(b[2], 1)],
        [(i, 1) for i in b],
        [(b[0], 2), (b[3], 1), (b[5], 1)],
    ]
    check(len(steps) == 20, "20 rewrites of the ring file")

    def expected(members):
        owners = {}
        for key, reps in zip(keys, ctx.predict.replicas(members, keys, 32)):
            owners[key] = next((r for r in reps if r in servers), "none")
        return owners, ctx.predict.fingerprint(members)

    def refusal_ok(got_revision, got_why, refused):
        """refused: None (the file in use is the last read), or the refused
        file's (revision, [what its refusal says])."""
        if refused is None:
            return not got_revision and not got_why
        return got_revision == str(refused[0]) and all(w in (got_why or "") for w in refused[1])

    def round_trip(conns, owners, fingerprint, revision, refused=None):
        wrong = []
        for pid in sorted(conns.conns):
            status = conns.get(pid, "/status")
            if status != ("%s %d" % (fingerprint, revision), None, None):
                wrong.append("worker %s /status: got %s, want %s %d"
                             % (pid, status, fingerprint, revision))
            body = conns.get(pid, "/refused")[0]
            got_revision, bar, got_why = body.partition("|")
            if not bar or not refusal_ok(got_revision, got_why, refused):
                wrong.append("worker %s /refused: got %r, want %s"
                             % (pid, body, refused or "nothing refused"))
            for key in keys:
                got = conns.get(pid, key)
                if got != (owners[key], fingerprint, str(revision)):
                    wrong.append("worker %s %s: got %s, want %s"
                                 % (pid, key, got, (owners[key], fingerprint, revision)))
                if not refusal_ok(*conns.refused, refused):
                    wrong.append("worker %s %s: refused %s, want %s"
                                 % (pid, key, conns.refused, refused or "nothing refused"))
        return wrong

    def log_lines(since, needle):
        return [l for l in lb.log_text()[since:].splitlines() if needle in l]

    conns = WorkerConnections(port, lb.workers)
    revision = 1
    owners, fingerprint = expected(initial)
    wrong = round_trip(conns, owners, fingerprint, revision)
    check(not wrong, "at start both workers route by the file's ring (revision 1, %s)"
          % fingerprint, "\n    ".join(wrong[:5]))

    with Stream(port, keys) as stream:
        for n, step in enumerate(steps, 2):
            sent_before = stream.sent
            log_mark = len(lb.log_text())
            if isinstance(step, tuple):
                text, line, what = step
                write(ringfile_text(n, []) + text)
                # once every worker has read it (and logged it), the ring is unchanged
                errors = wait_for(lambda: log_lines(log_mark, "%s:%d:" % (path, line)),
                                  lambda found: len(found) >= lb.workers)
                wrong = round_trip(conns, owners, fingerprint, revision,
                                   refused=(n, ["%s:%d:" % (path, line), what]))
                check(not wrong, "rewrite %d: a bad file (%s) changes nothing, and "
                      "$chring_refusal, $chring_refused_revision (also _ring) say so"
                      % (n - 1, what), "\n    ".join(wrong[:5]))
                keeping = "keeping the ring of revision %d, fingerprint %s" % (revision,
                                                                           fingerprint)
                check(len(errors) == lb.workers
                      and all("[error]" in l and what in l and keeping in l for l in errors),
                      "rewrite %d: the bad file is logged with %s:%d, once per worker"
                      % (n - 1, os.path.basename(path), line), "\n    ".join(errors)
                      or lb.log_text()[log_mark:])
                continue
            write(ringfile_text(n, step))
            owners, fingerprint = expected(step)
            revision = n
            wrong = wait_for(lambda: round_trip(conns, owners, fingerprint, revision),
                             lambda found: not found)
            check(not wrong, "rewrite %d: both workers follow it and route every key by "
                  "revision %d (%s)" % (n - 1, n, fingerprint), "\n    ".join(wrong[:5]))
            wrong = round_trip(conns, owners, fingerprint, revision)
            check(not wrong, "rewrite %d: and keep doing so" % (n - 1), "\n    ".join(wrong[:5]))
            loads = log_lines(log_mark, "loaded %s: revision %d," % (path, n))
            check(len(loads) == lb.workers and all("[notice]" in l and fingerprint in l
                                                   for l in loads),
                  "rewrite %d: each worker logged the load once, with the fingerprint"
                  % (n - 1), "\n    ".join(loads))
            if any(m[0] == stranger for m in step):
                strangers = log_lines(log_mark, '"%s" in %s matches no server' % (stranger, path))
                check(len(strangers) == lb.workers and all("[warn]" in l for l in strangers),
                      "rewrite %d: an id no server has is reported" % (n - 1),
                      "\n    ".join(strangers))
            check(stream.sent > sent_before, "rewrite %d: the stream kept sending" % (n - 1))
    conns.close()
    check(not stream.failures and stream.sent > 0,
          "no request of the stream failed (%d sent)" % stream.sent,
          "\n    ".join(stream.failures[:5]))


# -- availability: members marked down in the ring file ------------------------


def case_availability(ctx, check):
    """`%%down` lines in the followed ring file route around members
    without moving a token."""
    backends = harness.Backends(ctx.ws, 4)
    backends.start()
    b = backends.ids
    port = harness.free_ports(1)[0]
    path = os.path.join(ctx.ws.root, "ring.txt")
    keys = keys_for("availability", 400)
    members = [(i, 1) for i in b]
    walks = dict(zip(keys, ctx.predict.replicas(members, keys, len(b))))
    owners = {k: walks[k][0] for k in keys}

    def write(revision, down=(), extra=""):
        # directives (%%down, %%panic-threshold) come before the members
        write_atomically(path, ringfile_text(revision, []) + extra
                         + "".join("%%%%down %s\n" % i for i in down)
                         + "".join("%s %d\n" % m for m in members))

    write(1)
    lb = ctx.balancer()
    lb.start("""
  upstream ring {
    chring $request_uri file=%s check=100ms;
%s
  }""" % (path, "\n".join("    server %s max_fails=0;" % i for i in b)) + followed_server(port, "ring", """
    location = /down {  # no upstream: the named variables
      add_header X-Worker $pid always;
      return 200 "$chring_availability_ring $chring_down_ring";
    }""", headers="""
      add_header X-Availability $chring_availability always;
      add_header X-Down $chring_down always;
      add_header X-Upstream $upstream_addr always;"""))
    conns = WorkerConnections(port, lb.workers)

    def expected(avoid):
        """Each key's first member of its walk not in `avoid`."""
        return {k: next((m for m in walks[k] if m not in avoid), walks[k][0]) for k in keys}

    def routes(want, revision, down_text):
        """What differs: every worker sends every key to want[key] in one
        try, with one availability digest; returns (wrong, digests)."""
        wrong, digests = [], set()
        for pid in sorted(conns.conns):
            for key in keys:
                body, _, got_revision = conns.get(pid, key)
                upstream = conns.last.getheader("X-Upstream")
                digests.add(conns.last.getheader("X-Availability"))
                if (body, got_revision, upstream) != (want[key], str(revision), want[key]):
                    wrong.append("worker %s %s: got %s via %s (revision %s), want %s (revision %d)"
                                 % (pid, key, body, upstream, got_revision, want[key], revision))
                if (conns.last.getheader("X-Down") or "") != down_text:
                    wrong.append("worker %s %s: $chring_down %r, want %r"
                                 % (pid, key, conns.last.getheader("X-Down"), down_text))
        return wrong, digests

    def step(what, revision, want, down):
        down_text = ",".join(sorted(down))
        result = wait_for(lambda: routes(want, revision, down_text), lambda r: not r[0])
        wrong, digests = result
        check(not wrong, "%s: every worker routes every key as predicted, in one try" % what,
              "\n    ".join(wrong[:5]))
        check(len(digests) == 1, "%s: one $chring_availability over the workers (%s)"
              % (what, ", ".join(sorted(d or "none" for d in digests))))
        digest = next(iter(digests))
        named = set(conns.get(pid, "/down")[0] for pid in conns.conns)
        check(named == {"%s %s" % (digest, down_text)},
              "%s: $chring_availability_ring and $chring_down_ring agree" % what,
              "got %s" % named)
        return digest

    none = step("nothing down", 1, owners, ())
    check(none == "0x0000000000000000", "nothing down: the digest is 0 (%s)" % none)

    # b[1] down: its keys go to their next replica, every other key stays
    log_mark = len(lb.log_text())
    write(2, [b[1]])
    want = expected({b[1]})
    moved = sum(1 for k in keys if owners[k] == b[1])
    check(moved > 0 and all(want[k] == owners[k] for k in keys if owners[k] != b[1]),
          "the prediction moves only %s's %d keys" % (b[1], moved))
    one_down = step("%s down" % b[1], 2, want, [b[1]])
    check(one_down != none and re.match(r"^0x[0-9a-f]{16}$", one_down or ""),
          "%s down: a new digest (%s)" % (b[1], one_down))
    notices = [l for l in lb.log_text()[log_mark:].splitlines()
               if "availability %s from %s: 1 marked down (%s)" % (one_down, path, b[1]) in l]
    check(len(notices) == lb.workers and all("[notice]" in l for l in notices),
          "the change is logged once per worker, with the digest and the id",
          "\n    ".join(notices) or lb.log_text()[log_mark:])

    # b[2] stopped as well: keys whose next replica is b[2] skip b[1] on the retry
    backends.set_alive([i for i in b if i != b[2]])
    want2 = expected({b[1], b[2]})
    wrong = []
    for pid in sorted(conns.conns):
        for key in keys:
            body = conns.get(pid, key)[0]
            tried = (conns.last.getheader("X-Upstream") or "").split(", ")
            if body != want2[key] or b[1] in tried:
                wrong.append("worker %s %s: %s via %s, want %s" % (pid, key, body, tried, want2[key]))
    check(not wrong, "%s down and %s stopped: every key answered by its first replica "
          "neither down nor stopped, %s never tried" % (b[1], b[2], b[1]), "\n    ".join(wrong[:5]))
    backends.set_alive(b)

    # the line removed: every key back on exactly its owner
    write(3)
    back = step("the mark removed", 3, owners, ())
    check(back == none, "the mark removed: the digest is 0 again")

    # three of four down is more than the default 50%: panic, marks ignored
    log_mark = len(lb.log_text())
    write(4, b[:3])
    step("three of four down (panic)", 4, owners, b[:3])
    warnings = [l for l in lb.log_text()[log_mark:].splitlines()
                if "panic" in l and "[warn]" in l]
    check(len(warnings) == lb.workers, "the panic is logged once per worker",
          "\n    ".join(warnings) or lb.log_text()[log_mark:])

    # with a threshold of 100 the marks hold: every key on the one left
    write(5, b[:3], extra="%%panic-threshold 100\n")
    step("three of four down, threshold 100", 5, expected(set(b[:3])), b[:3])

    write(6)
    step("no mark", 6, owners, ())
    conns.close()


# -- fallback, access: starting when the ring file cannot be used ---------------


def followed_server(port, upstream, locations="", headers=""):
    """A server proxying to `upstream` whose answers carry the chring
    variables and the worker's pid (for WorkerConnections); `locations`:
    more location blocks for it; `headers`: more lines for its location."""
    return """
  server {
    listen 127.0.0.1:%d reuseport;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    location / {
      proxy_pass http://%s;
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
      add_header X-Chring-Fingerprint $chring_fingerprint always;
      add_header X-Chring-Revision $chring_revision always;
      add_header X-Chring-Refused-Revision $chring_refused_revision always;
      add_header X-Chring-Refusal $chring_refusal always;
      add_header X-Worker $pid always;%s
    }%s
  }""" % (port, upstream, headers, locations)


def write_atomically(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def every_worker_routes(ctx, conns, keys, members, revision, refusal=None):
    """What differs from: every worker sends every key to the owner the C
    API predicts for `members`, with that ring's fingerprint and
    `revision` in $chring_fingerprint and $chring_revision, and
    $chring_refusal empty (refusal None) or containing `refusal`."""
    owners = dict(zip(keys, ctx.predict.owners(members, keys)))
    fingerprint = ctx.predict.fingerprint(members)
    wrong = []
    for pid in sorted(conns.conns):
        for key in keys:
            got = conns.get(pid, key)
            if got != (owners[key], fingerprint, str(revision)):
                wrong.append("worker %s %s: got %s, want %s"
                             % (pid, key, got, (owners[key], fingerprint, revision)))
            why = conns.refused[1]
            if (not why) if refusal else why:
                wrong.append("worker %s %s: $chring_refusal %r, want %s"
                             % (pid, key, why, refusal or "empty"))
            elif refusal and refusal not in why:
                wrong.append("worker %s %s: $chring_refusal %r lacks %r" % (pid, key, why, refusal))
    return wrong


def start_from_fallback_then_follow(ctx, check, lb, backends, primary, seed, why, refusal,
                                    make_usable):
    """nginx -t and start with `file=primary fallback=seed`, while the
    primary cannot be used because of `why` (the workers say `refusal`);
    every worker routes by the seed; make_usable() lets the primary be
    used; every worker then follows it, each logging the load once."""
    b = backends.ids
    seed_members = [(b[0], 1), (b[1], 2)]
    primary_members = [(b[0], 1), (b[1], 1), (b[2], 1)]
    write_atomically(seed, ringfile_text(2, seed_members))
    os.chmod(seed, 0o600)  # only the master reads the fallback
    port = harness.free_ports(1)[0]
    keys = keys_for("fallback", 200)
    body = """
  upstream ring {
    chring $request_uri file=%s fallback=%s;
%s
  }%s""" % (primary, seed, "\n".join("    server %s;" % i for i in b), followed_server(port, "ring"))

    status, out = lb.test_config(body)
    warned = [l for l in out.splitlines() if "[warn]" in l and "starting from the fallback" in l]
    check(status == 0 and len(warned) == 1 and why in warned[0]
          and "starting from the fallback %s (revision 2, " % seed in warned[0]
          and warned[0].rstrip().endswith("and following %s" % primary),
          "nginx -t passes with a warning naming the primary, why (%s) and the fallback" % why,
          "status %d, output:\n%s" % (status, out.strip()))

    lb.start(body)
    conns = WorkerConnections(port, lb.workers)
    wrong = every_worker_routes(ctx, conns, keys, seed_members, 2, refusal=refusal)
    check(not wrong, "both workers route every key by the fallback's ring, with its revision "
          "and fingerprint, and $chring_refusal says why the primary is not in use",
          "\n    ".join(wrong[:5]))

    log_mark = len(lb.log_text())
    make_usable()
    wrong = wait_for(lambda: every_worker_routes(ctx, conns, keys, primary_members, 3),
                     lambda found: not found)
    check(not wrong, "once the primary can be used both workers follow it (revision 3)",
          "\n    ".join(wrong[:5]))
    loads = [l for l in lb.log_text()[log_mark:].splitlines()
             if "loaded %s: revision 3," % primary in l]
    check(len(loads) == lb.workers and all("[notice]" in l for l in loads),
          "each worker logged the primary's load once", "\n    ".join(loads))
    conns.close()
    return lb


def case_fallback(ctx, check):
    """`file=` missing: fails without `fallback=`, starts from it with."""
    backends = harness.Backends(ctx.ws, 3)
    backends.start()
    b = backends.ids
    port = harness.free_ports(1)[0]
    primary = os.path.join(ctx.ws.root, "primary.ring")
    seed = os.path.join(ctx.ws.root, "seed.ring")
    lb = ctx.balancer()
    servers = "\n".join("    server %s;" % i for i in b)

    def body(parameters):
        return "\n  upstream ring {\n    chring $request_uri %s;\n%s\n  }%s" % (
            parameters, servers, followed_server(port, "ring"))

    status, out = lb.test_config(body("file=%s" % primary))
    check(status == 1 and "[emerg]" in out and "%s: cannot open the ring file" % primary in out
          and "(and no \"fallback=\" to start from)" in out,
          "a missing primary without fallback= fails nginx -t, saying so",
          "status %d, output:\n%s" % (status, out.strip()))

    # a good primary with a fallback that cannot be used: passes, with a warning
    write_atomically(primary, ringfile_text(1, [(b[0], 1)]))
    status, out = lb.test_config(body("file=%s fallback=%s" % (primary, seed)))
    check(status == 0 and "[warn]" in out
          and "the fallback for %s cannot be used: %s:" % (primary, seed) in out,
          "a good primary with a missing fallback passes nginx -t with a warning",
          "status %d, output:\n%s" % (status, out.strip()))
    os.unlink(primary)

    start_from_fallback_then_follow(
        ctx, check, lb, backends, primary, seed, "%s: cannot open the ring file" % primary,
        "cannot open the ring file: No such file or directory",
        lambda: write_atomically(primary, ringfile_text(3, [(b[0], 1), (b[1], 1), (b[2], 1)])))

    # `nginx -s` only signals the master: a configuration whose file cannot
    # be used (it would fail nginx -t) must not keep it from signalling
    os.unlink(primary)
    lb.write(body("file=%s" % primary))
    r = subprocess.run([lb.nginx_bin, "-p", lb.prefix + "/", "-c", lb.conf_path, "-s", "reopen"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, env=lb.env)
    check(r.returncode == 0 and lb.process.poll() is None,
          "with the file missing and no fallback, nginx -s reopen still signals the master",
          "status %d, output:\n%s" % (r.returncode, r.stdout.decode(errors="replace")))


def case_access(ctx, check):
    """As root, workers as `nobody`: the ring file must be theirs to read."""
    nobody = pwd.getpwnam("nobody")
    group = grp.getgrgid(nobody.pw_gid).gr_name
    os.chmod(ctx.ws.root, 0o711)  # the workers pass through to the rings
    rings = os.path.join(ctx.ws.root, "rings")
    hidden = os.path.join(ctx.ws.root, "hidden")  # only root may search it
    os.mkdir(rings)
    os.chmod(rings, 0o755)
    os.mkdir(hidden)
    os.chmod(hidden, 0o700)

    backends = harness.Backends(ctx.ws, 3)
    backends.start()
    b = backends.ids
    port = harness.free_ports(1)[0]
    lb = ctx.balancer(user="nobody %s" % group)
    servers = "\n".join("    server %s;" % i for i in b)

    def body(parameters):
        return "\n  upstream ring {\n    chring $request_uri %s;\n%s\n  }%s" % (
            parameters, servers, followed_server(port, "ring"))

    def not_readable(path):
        return "file \"%s\" is not readable by user \"nobody\" (the workers' user)" % path

    primary = os.path.join(rings, "primary.ring")
    write_atomically(primary, ringfile_text(1, [(b[0], 1), (b[1], 1)]))
    os.chmod(primary, 0o600)
    status, out = lb.test_config(body("file=%s" % primary))
    with open(lb.conf_path) as f:
        line = next(n for n, l in enumerate(f, 1) if "chring $request_uri" in l)
    check(status == 1 and "[emerg]" in out and not_readable(primary) in out
          and "Permission denied" in out and "%s:%d" % (lb.conf_path, line) in out
          and "test failed" in out,
          "a ring file only root can read fails nginx -t naming the file, the user and the line",
          "status %d, output:\n%s" % (status, out.strip()))

    os.chmod(primary, 0o644)
    status, out = lb.test_config(body("file=%s" % primary))
    check(status == 0, "readable by the workers' user, it passes nginx -t", out.strip())

    behind = os.path.join(hidden, "primary.ring")
    write_atomically(behind, ringfile_text(3, [(b[0], 1), (b[1], 1), (b[2], 1)]))
    os.chmod(behind, 0o644)
    status, out = lb.test_config(body("file=%s" % behind))
    check(status == 1 and not_readable(behind) in out and "search access" in out,
          "a readable file in a directory the workers' user cannot search fails nginx -t",
          "status %d, output:\n%s" % (status, out.strip()))

    start_from_fallback_then_follow(
        ctx, check, lb, backends, behind, os.path.join(rings, "seed.ring"),
        not_readable(behind) + ": Permission denied",
        "cannot open the ring file: Permission denied", lambda: os.chmod(hidden, 0o755))
    # each worker read the file it could not open once, and said so once
    refused = [l for l in lb.log_text().splitlines()
               if "[error]" in l and "%s: cannot open the ring file: Permission denied" % behind in l]
    check(len(refused) == lb.workers and all("keeping the ring of revision 2" in l for l in refused),
          "each worker logged once that it cannot read the primary, keeping the fallback's ring",
          "\n    ".join(refused) or lb.log_text())


# -- zones: the failover walk in zones-first order ------------------------------


def case_zones(ctx, check):
    """`chring $request_uri file=PATH replicas=zones-first;`: a zone's
    servers stopped, each key's second try goes to another zone."""
    backends = harness.Backends(ctx.ws, 6)
    backends.start()
    b = backends.ids
    members = [(b[i], 1, zone) for i, zone in enumerate("aabbcc")]
    path = os.path.join(ctx.ws.root, "zones.ring")
    with open(path, "w") as f:
        f.write("".join("%s %d %s\n" % m for m in members))
    dead = {b[0], b[1]}  # zone a
    backends.set_alive([i for i in b if i not in dead])
    port = harness.free_ports(1)[0]
    keys = keys_for("zones", 1000)
    lb = ctx.balancer()
    for policy in ("nodes", "zones-first"):
        body = """
  upstream ring {
    chring $request_uri file=%s replicas=%s;
%s
  }
  server {
    listen 127.0.0.1:%d;
    location / {
      proxy_pass http://ring;
      proxy_connect_timeout 2s;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 2;
    }
  }""" % (path, policy, "\n".join("    server %s max_fails=0;" % i for i in b), port)
        if lb.process is None:
            lb.start(body)
        else:
            lb.reload(body)
        got = harness.route(port, keys)
        replicas = ctx.predict.replicas(members, keys, 2, ["--policy", policy])
        want = [next((r for r in reps if r not in dead), "HTTP 502") for reps in replicas]
        check_routing(check, "replicas=%s, zone a stopped, 2 tries" % policy, keys, got, want)
        failed = want.count("HTTP 502")
        if policy == "nodes":
            check(failed > 0, "replicas=nodes: %d keys have both first replicas in zone a" % failed)
        else:
            check(failed == 0 and "HTTP 502" not in got,
                  "replicas=zones-first: every key is answered from another zone")


class CountingBackends:
    """Python HTTP backends on loopback that answer their own id after a
    per-backend delay (`delay`, seconds, changeable), counting requests served and the most they had in
    flight at once (the bound's effect, seen from the backends)."""

    def __init__(self, count):
        import http.server
        import socketserver

        self.ports = harness.free_ports(count)
        self.ids = ["127.0.0.1:%d" % p for p in self.ports]
        self.lock = threading.Lock()
        self.in_flight = {i: 0 for i in self.ids}
        self.peak = {i: 0 for i in self.ids}
        self.served = {i: 0 for i in self.ids}
        self.delay = {i: 0.0 for i in self.ids}
        self.servers = []
        outer = self

        for server_id, port in zip(self.ids, self.ports):
            class Handler(http.server.BaseHTTPRequestHandler):
                me = server_id

                def do_GET(self):
                    with outer.lock:
                        outer.in_flight[self.me] += 1
                        outer.peak[self.me] = max(outer.peak[self.me], outer.in_flight[self.me])
                        outer.served[self.me] += 1
                    try:
                        time.sleep(outer.delay[self.me])
                    finally:
                        # Before the answer leaves: once nginx has the answer it
                        # may send this backend the next request while this
                        # thread has not run yet, and a count decremented after
                        # the write would see one more in flight than nginx does.
                        with outer.lock:
                            outer.in_flight[self.me] -= 1
                    body = self.me.encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

                def log_message(self, *args):
                    pass

            class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
                daemon_threads = True
                request_queue_size = 256

            srv = Server(("127.0.0.1", port), Handler)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            self.servers.append(srv)

    def reset(self):
        with self.lock:
            for i in self.ids:
                self.peak[i] = self.served[i] = 0

    def stop(self):
        for srv in self.servers:
            srv.shutdown()
            srv.server_close()


def hammer(port, paths, clients):
    """`clients` threads send the paths (split between them) at once, each
    over its own connections; returns the bodies."""
    out = [None] * len(paths)

    def run(k):
        for j in range(k, len(paths), clients):
            status, body = harness.http_get(port, paths[j], timeout=30)
            out[j] = body.decode() if status == 200 else "HTTP %d" % status

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def case_balance(ctx, check):
    """`balance=1.25` with the upstream's shared zone, 2 workers, 4 backends
    of which the hot key's home is slowed: every backend's peak in flight
    stays within ceil(1.25 * C / 4) for C concurrent clients (the total in
    flight L is at most C - 1 when a request is placed, and a node's cap is
    at most ceil(1.25 (L + 1) / 4)); the same upstream without the bound
    sends the hot key's burst to its home. A `down` backend gets no
    request, and its keys come back when `down` is removed."""
    clients = 24
    cap = -(-(125 * clients) // 400)  # ceil(1.25 * 24 / 4) = 8
    backends = CountingBackends(4)
    ids = backends.ids
    hot = "/hot"
    home = ctx.predict.owners([(i, 1) for i in ids], [hot])[0]
    for i in ids:
        backends.delay[i] = 0.3 if i == home else 0.02
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    try:
        def conf(balance, down=None):
            servers = [Server(i, down=(i == down)) for i in ids]
            options = {"balance": "1.25"} if balance else {}
            return ctx.render([(port, Upstream("ring", servers, options=options,
                                               tail="zone chring_balance 64k;"))])

        lb.start(conf(False))
        paths = [hot] * 240 + ["/k%d" % i for i in range(60)]
        hammer(port, paths, clients)
        plain_peak = backends.peak[home]
        check(plain_peak > cap, "without the bound the hot key's home %s holds %d requests at "
              "once (over %d)" % (home, plain_peak, cap))

        lb.reload(conf(True))
        backends.reset()
        got = hammer(port, paths, clients)
        check(all(g in ids for g in got), "every request answered with the bound",
              str([g for g in got if g not in ids][:5]))
        peaks = dict(backends.peak)
        check(all(v <= cap for v in peaks.values()),
              "with balance=1.25 over 2 workers every backend's peak in flight is <= %d: %s"
              % (cap, peaks))
        check(backends.served[home] > 0 and sum(1 for v in backends.served.values() if v) >= 3,
              "the hot key is served by its home and spills to others: %s" % backends.served)

        # Masked: sequential requests (nothing in flight, the bound is neutral).
        for i in ids:
            backends.delay[i] = 0.0
        keys = ["/m%d" % i for i in range(400)]
        base = harness.route(port, keys)
        want = ctx.predict.owners([(i, 1) for i in ids], keys)
        n, detail = mismatches(keys, base, want)
        check(n == 0, "idle, the bounded upstream routes as the ring (%d differ)" % n, detail)
        victim = ids[2]
        lb.reload(conf(True, down=victim))
        backends.reset()
        got = harness.route(port, keys)
        check(backends.served[victim] == 0, "the down backend got no request (%d)"
              % backends.served[victim])
        unchanged = sum(1 for b, g in zip(base, got) if b != victim and g == b)
        stayed = sum(1 for b in base if b != victim)
        check(unchanged == stayed, "keys of other backends stay (%d of %d)" % (unchanged, stayed))
        lb.reload(conf(True))
        back = harness.route(port, keys)
        n, detail = mismatches(keys, back, base)
        check(n == 0, "`down` removed: every key is back (%d differ)" % n, detail)
    finally:
        backends.stop()


CASES = {
    "zones": case_zones,
    "routing": case_routing,
    "down": case_down,
    "stop": case_stop,
    "tries": case_tries,
    "compat": case_compat,
    "wide": case_wide,
    "backup": case_backup,
    "fallback": case_fallback,
    "access": case_access,
    "badconfig": case_badconfig,
    "ringfile": case_ringfile,
    "balance": case_balance,
    "availability": case_availability,
}
FLAVORS = {"module": ModuleFlavor, "lua": LuaFlavor}

# cases that start nginx as root with workers of another user
ROOT_CASES = ("access",)


class Context:
    def __init__(self, flavor, predict, ws):
        self.flavor = flavor
        self.ws = ws
        self.predict = harness.Predictor(predict, ws.root)

    def balancer(self, **kwargs):
        return self.flavor.instance(self.ws, **kwargs)

    def render(self, listeners, location_extra=""):
        return self.flavor.render(listeners, location_extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--predict", required=True, help="bindings/nginx/tests/chring_predict")
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--flavor", default="module", choices=sorted(FLAVORS))
    parser.add_argument("--module", help="module flavor: ngx_http_upstream_chring_module.so")
    parser.add_argument("--ndk-module", help="lua flavor: ndk_http_module.so")
    parser.add_argument("--lua-module", help="lua flavor: ngx_http_lua_module.so")
    parser.add_argument("--lua-path", action="append", default=[],
                        help="lua flavor: a directory of Lua modules (repeat)")
    parser.add_argument("--chring-lib", help="lua flavor: libchring.so for the binding")
    args = parser.parse_args()

    flavor = FLAVORS[args.flavor](args)
    if args.case not in flavor.cases:
        parser.error("case %s does not apply to the %s flavor" % (args.case, flavor.name))

    if args.case in ROOT_CASES and os.geteuid() != 0:
        print("SKIP: case %s needs root (nginx checks as the workers' user only then)" % args.case)
        return 77

    check = Check()
    try:
        with harness.Workspace(args.nginx) as ws:
            CASES[args.case](Context(flavor, args.predict, ws), check)
            bad = [(i.prefix, l) for i in ws.instances for l in i.bad_log_lines()]
            check(not bad, "no crash, [alert] or [crit] in the nginx logs",
                  "\n".join("%s: %s" % b for b in bad))
    except Exception as e:  # an nginx that would not start is a failure, not a skip
        check(False, "case %s ran to the end" % args.case, "%s: %s" % (type(e).__name__, e))
    print("%d passed, %d failed" % (check.passed, check.failed))
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
