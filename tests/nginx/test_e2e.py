#!/usr/bin/env python3
"""End-to-end tests of the chring upstream module in a real nginx.

    test_module.py --nginx NGINX --module MODULE.so --predict CHRING_PREDICT --case CASE

Backends are nginx `server` blocks on free loopback ports answering their
own `server` text; the balancer is a second nginx that loads the module.
Every routing check compares what nginx did with what the C API says
(tests/nginx/chring_predict) for the same membership and options, key by
key. Cases:

  routing    every key reaches the predicted backend, twice, in two orders;
             shares follow the weights; other ring options end to end
  down       `down` + reload: only that backend's keys move, spread over
             the survivors; removing `down` brings every key back
  stop       a stopped backend (connection refused, max_fails): same as
             down, at run time; restarted, its keys come back
  tries      a failed try goes to the key's next replica, at most
             proxy_next_upstream_tries in all
  backup     `backup` servers take over, by their own ring, when every
             primary fails
  compat     placement=nginx routes as nginx's `hash ... consistent`,
             also with a `down` and a failed server
  badconfig  bad configurations fail `nginx -t` with a clear message and
             exit status 1, never a crash

Statistical bounds (share checks) are 5 standard deviations; each is
derived where it is computed. Exit status 0 when every check passed.
"""

import argparse
import http.client
import math
import os
import sys
import time

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


def keys_for(case, count=KEYS):
    return ["/%s/item-%d" % (case, i) for i in range(count)]


def balancer_body(port, directive, servers, location_extra="", upstream="ring"):
    """servers: [(server text, parameters)] in configuration order."""
    lines = ["    server %s %s;" % (s, params) for s, params in servers]
    return """
  upstream %s {
    %s
%s
  }
  server {
    listen 127.0.0.1:%d;
    location / {
      proxy_pass http://%s;
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
      %s
    }
  }""" % (upstream, directive, "\n".join(lines), port, upstream, location_extra)


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


# -- cases ------------------------------------------------------------------


def case_routing(ctx, check):
    """Exact prediction, determinism, shares by weight, ring options."""
    backends = harness.Backends(ctx.ws, 5)
    backends.start()
    weights = dict(zip(backends.ids, [1, 1, 2, 1, 3]))
    members = [(i, weights[i]) for i in backends.ids]
    servers = [(i, "weight=%d" % weights[i]) for i in backends.ids]
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    keys = keys_for("routing")

    lb.start(balancer_body(port, "chring $request_uri tokens=%d hash=xxh3;" % TOKENS, servers))
    got = harness.route(port, keys)
    want = ctx.predict.owners(members, keys, ["--tokens", str(TOKENS), "--hash", "xxh3"])
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
    owned = ctx.predict.ownership(members, ["--tokens", str(TOKENS), "--hash", "xxh3"])
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

    # Other options, end to end: a different hasher, token count and seed.
    lb.reload(balancer_body(port, "chring $request_uri tokens=40 hash=murmur3_32 seed=12345;",
                            servers))
    got = harness.route(port, keys)
    want = ctx.predict.owners(members, keys,
                              ["--tokens", "40", "--hash", "murmur3_32", "--seed", "12345"])
    check_routing(check, "tokens=40 hash=murmur3_32 seed=12345", keys, got, want)

    # A complex value as the key: the same keys through a header.
    lb.reload(balancer_body(port, "chring \"k:$http_x_user\";", servers))
    users = ["user-%d" % i for i in range(1000)]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    got = []
    try:
        for u in users:
            conn.request("GET", "/", headers={"X-User": u})
            resp = conn.getresponse()
            got.append(resp.read().decode())
    finally:
        conn.close()
    want = ctx.predict.owners(members, ["k:" + u for u in users])
    check_routing(check, "key \"k:$http_x_user\" (defaults)", users, got, want)


def case_down(ctx, check):
    """`down` and reload: only its keys move, and come back."""
    backends = harness.Backends(ctx.ws, 5)
    backends.start()
    ids = backends.ids
    weights = {i: 1 for i in ids}
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    keys = keys_for("down")
    directive = "chring $request_uri;"

    def servers(down=()):
        return [(i, "down" if i in down else "") for i in ids]

    lb.start(balancer_body(port, directive, servers()))
    base = harness.route(port, keys)
    check_routing(check, "all up", keys, base, ctx.predict.owners([(i, 1) for i in ids], keys))

    for cycle, victim in enumerate([ids[1], ids[3], ids[1]]):
        lb.reload(balancer_body(port, directive, servers(down=[victim])))
        got = harness.route(port, keys)
        want = ctx.predict.owners([(i, 0 if i == victim else 1) for i in ids], keys)
        check_routing(check, "cycle %d, %s down" % (cycle, victim), keys, got, want)
        stayed = [k for k, b in zip(keys, base) if b != victim]
        unchanged = sum(1 for b, g in zip(base, got) if b != victim and g == b)
        check(unchanged == len(stayed), "cycle %d: the %d keys of other backends stay (%d did)"
              % (cycle, len(stayed), unchanged))
        check(victim not in got, "cycle %d: no key reaches the down backend" % cycle)
        moved_to = [g for b, g in zip(base, got) if b == victim]
        check_spread(check, "cycle %d" % cycle, moved_to, [i for i in ids if i != victim],
                     weights, TOKENS)

        lb.reload(balancer_body(port, directive, servers()))
        back = harness.route(port, keys)
        n, detail = mismatches(keys, back, base)
        check(n == 0, "cycle %d: `down` removed, every key is back (%d differ)" % (cycle, n),
              detail)


def case_stop(ctx, check):
    """A backend stops (connection refused): its keys go to their next
    replica, the node the ring without it predicts; restarted, they return."""
    backends = harness.Backends(ctx.ws, 5)
    backends.start()
    ids = backends.ids
    weights = {i: 1 for i in ids}
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    keys = keys_for("stop")
    fail_timeout = 2
    servers = [(i, "max_fails=1 fail_timeout=%ds" % fail_timeout) for i in ids]

    lb.start(balancer_body(port, "chring $request_uri;", servers))
    base = harness.route(port, keys)
    check_routing(check, "all up", keys, base, ctx.predict.owners([(i, 1) for i in ids], keys))

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
    backends = harness.Backends(ctx.ws, 6)
    backends.start()
    ids = backends.ids
    members = [(i, 1) for i in ids]
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    keys = keys_for("tries")
    servers = [(i, "max_fails=0") for i in ids]
    dead = {ids[0], ids[4]}
    backends.set_alive([i for i in ids if i not in dead])
    replicas = ctx.predict.replicas(members, keys, 3)

    for tries in (2, 0):
        extra = "proxy_next_upstream error timeout; proxy_next_upstream_tries %d;" % tries
        if lb.process is None:
            lb.start(balancer_body(port, "chring $request_uri;", servers, extra))
        else:
            lb.reload(balancer_body(port, "chring $request_uri;", servers, extra))
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


def case_backup(ctx, check):
    """`backup` servers: a ring of their own, used when every primary fails."""
    backends = harness.Backends(ctx.ws, 5)
    backends.start()
    primaries, backups = backends.ids[:3], backends.ids[3:]
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    keys = keys_for("backup")
    fail_timeout = 2
    servers = [(i, "max_fails=1 fail_timeout=%ds" % fail_timeout) for i in primaries]
    servers += [(i, "backup") for i in backups]

    lb.start(balancer_body(port, "chring $request_uri;", servers))
    base = harness.route(port, keys)
    check_routing(check, "all up: primaries only", keys, base,
                  ctx.predict.owners([(i, 1) for i in primaries], keys))

    backends.set_alive(backups)
    got = harness.route(port, keys)
    check_routing(check, "every primary stopped: the backup ring", keys, got,
                  ctx.predict.owners([(i, 1) for i in backups], keys))
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
    servers = [(i, "weight=%d max_fails=1 fail_timeout=30s%s" % (weights[i], " down" if i == down
                                                                  else "")) for i in ids]
    port_hash, port_chring = harness.free_ports(2)
    lb = ctx.balancer()
    body = (balancer_body(port_hash, "hash $request_uri consistent;", servers, upstream="builtin")
            + balancer_body(port_chring, "chring $request_uri placement=nginx;", servers))
    keys = keys_for("compat")
    lb.start(body)

    builtin = harness.route(port_hash, keys)
    ours = harness.route(port_chring, keys)
    n, detail = mismatches(keys, ours, builtin)
    check(n == 0, "placement=nginx routes %d keys as `hash ... consistent` (%d differ)"
          % (len(keys), n), detail)
    members = [(i, 0 if i == down else weights[i]) for i in ids]
    check_routing(check, "placement=nginx", keys, ours,
                  ctx.predict.owners(members, keys, ["--placement", "nginx"]))

    victim = ids[3]  # the heaviest: most keys to move
    backends.set_alive([i for i in ids if i != victim])
    builtin = harness.route(port_hash, keys)
    ours = harness.route(port_chring, keys)
    n, detail = mismatches(keys, ours, builtin)
    check(n == 0, "with %s stopped, the same fallback as nginx (%d differ)" % (victim, n), detail)
    check(victim not in ours, "no key reaches the stopped backend")


def case_badconfig(ctx, check):
    """`nginx -t` on bad configurations: status 1 and the reason."""
    backends_ids = ["127.0.0.1:%d" % p for p in harness.free_ports(2)]
    port = harness.free_ports(1)[0]
    lb = ctx.balancer()
    good = [(i, "") for i in backends_ids]

    def upstream(directive, servers=good):
        return balancer_body(port, directive, servers)

    status, out = lb.test_config(upstream("chring $request_uri tokens=160 hash=xxh3;"))
    check(status == 0, "a good configuration passes nginx -t", out)

    cases = [
        ("unknown hasher", upstream("chring $request_uri hash=nosuch;"),
         "no hasher named 'nosuch'"),
        ("unknown hasher with plugin_dir", upstream(
            "chring $request_uri hash=nosuch plugin_dir=/nonexistent;"),
         "no hasher named 'nosuch'"),
        ("tokens=0", upstream("chring $request_uri tokens=0;"),
         "tokens per unit of weight must be 1..65536"),
        ("tokens not a number", upstream("chring $request_uri tokens=lots;"),
         "invalid \"tokens=lots\""),
        ("tokens too large", upstream("chring $request_uri tokens=70000;"),
         "must be 1..65536"),
        ("seed overflow", upstream("chring $request_uri seed=18446744073709551616;"),
         "unsigned 64-bit"),
        ("unknown placement", upstream("chring $request_uri placement=ketama;"),
         "\"native\" or \"nginx\""),
        ("unknown parameter", upstream("chring $request_uri replicas=3;"),
         "invalid parameter \"replicas=3\""),
        ("parameter twice", upstream("chring $request_uri hash=xxh3 hash=xxh64;"),
         "\"hash\" is given twice"),
        ("tokens with placement=nginx", upstream("chring $request_uri placement=nginx tokens=100;"),
         "no effect with \"placement=nginx\""),
        ("hasher with placement=nginx", upstream("chring $request_uri placement=nginx hash=xxh3;"),
         "hashes with crc32"),
        ("no key", upstream("chring;"), "invalid number of arguments in \"chring\""),
        ("directive twice", upstream("chring $request_uri;\n    chring $uri;"),
         "\"chring\" directive is duplicate"),
        ("no servers", upstream("chring $request_uri;", servers=[]),
         "no servers are inside upstream"),
        ("only backup servers", upstream("chring $request_uri;",
                                         servers=[(i, "backup") for i in backends_ids]),
         "no servers in upstream"),
        ("weight over chring's limit", upstream(
            "chring $request_uri;", servers=[(backends_ids[0], "weight=2000000")]),
         "weight"),
        ("too many tokens", upstream(
            "chring $request_uri tokens=65536;", servers=[(backends_ids[0], "weight=300")]),
         "chring: primary servers of upstream \"ring\""),
        ("outside an upstream", "  server { listen 127.0.0.1:%d; chring $request_uri; }" % port,
         "\"chring\" directive is not allowed here"),
    ]
    for name, body, expected in cases:
        status, out = lb.test_config(body)
        ok = status == 1 and expected in out and "[emerg]" in out and "test failed" in out
        check(ok, "%s: nginx -t exits 1 with %r" % (name, expected),
              "status %d, output:\n%s" % (status, out.strip()))


CASES = {
    "routing": case_routing,
    "down": case_down,
    "stop": case_stop,
    "tries": case_tries,
    "backup": case_backup,
    "compat": case_compat,
    "badconfig": case_badconfig,
}


class Context:
    def __init__(self, args, ws):
        self.args = args
        self.ws = ws
        self.predict = harness.Predictor(args.predict, ws.root)

    def balancer(self):
        return self.ws.nginx("balancer", modules=[os.path.abspath(self.args.module)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--module", required=True)
    parser.add_argument("--predict", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    args = parser.parse_args()

    check = Check()
    try:
        with harness.Workspace(args.nginx) as ws:
            CASES[args.case](Context(args, ws), check)
            try:
                ws.check_logs()
                check(True, "no crash, [alert] or [crit] in the nginx logs")
            except AssertionError as e:
                check(False, "no crash, [alert] or [crit] in the nginx logs", str(e))
    except Exception as e:  # an nginx that would not start is a failure, not a skip
        check(False, "case %s ran to the end" % args.case, "%s: %s" % (type(e).__name__, e))
    print("%d passed, %d failed" % (check.passed, check.failed))
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
