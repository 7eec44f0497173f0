#!/usr/bin/env python3
"""Fleet availability end to end: a dead backend is skipped by every nginx
worker, without moving a token, from health checks through etcd (meson test
etcd-availability, suite 'etcd').

    test_availability.py --chring CHRING --nginx NGINX --nginx-module MODULE \\
                         --nginx-tests bindings/nginx/tests [--results-dir DIR]

The fleet, on loopback: a real etcd (etcd_server.py) holding 4 members, the
backends, each a one-process nginx answering its own id; 3 `chring health`
checkers (--interval 0.1 --fall 2 --rise 2), the third reaching the
backends only through TCP proxies (tcp_proxy.py) the test can cut; 2 front
nginx instances (2 workers each) with the chring upstream following the
file of their own `chring watch`, `proxy_next_upstream error timeout`, and
$chring_availability, $upstream_addr and $pid in response headers; wrk
sending keys through both fronts the whole time.

  kills      10 times: kill -9 a backend (in turn); the time until every
             worker of both fronts answers its keys from another backend in
             one try (kill-to-skip); then every key is checked: the dead
             backend's keys on another backend, every other key on its
             owner, one availability digest; the backend restarted, every
             key back on exactly its old backend, with the digest of
             nothing down.
  partition  checker 3's proxies cut: it lists every backend down, but with
             checkers 1 and 2 seeing them up nothing is marked down; checker
             2 killed (kill -9): its key goes with its lease, and 1 checker
             of 2 is no majority: still nothing down.
  panic      3 of 4 marked down by `chring etcd down --for`: more than the
             50% threshold, every key is routed as if nothing were marked,
             and each nginx worker logs the panic.

wrk's requests are counted: none may fail (a request that meets the dead
backend before the mark is retried on the next replica). Times are measured
(p50/p99 of kill-to-skip, written to RESULTS-availability.json in
--results-dir), never asserted: every wait is bounded (60 s) only so that a
fleet that never converges fails. Ends with "N passed, N failed"; exits 77
(skipped) when etcd, the CLI's etcd and health commands, nginx with the
module or wrk is missing.
"""

import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import etcd_server  # noqa: E402
from etcd_server import EtcdClient, EtcdServer  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402
from test_etcd import Checks, finish, fleet_arguments, fleet_missing, fleet_parser, log_tails, percentile, run_fleet  # noqa: E402

SKIP = 77
PREFIX = "/chring-test/availability"
BACKENDS = 4
FRONTS = 2
WORKERS = 2        # per front
CHECKERS = 3       # the last one through the proxies
KILLS = 10
KEYS = ["k%d" % i for i in range(64)]
WAIT = 60.0        # bound on every wait: reached only by a fleet that never converges
NOTHING_DOWN = "0x0000000000000000"
DOWN_LINE = re.compile(r"^%%down (\S+)", re.M)
# Every membership change here is meant (etcd_cli_test.py's guard case has the guard rails)
UNGUARDED = ["--max-moved", "100%"]


def listen_ports(count):
    """`count` free loopback ports below the kernel's ephemeral range: the
    checkers' probes and the proxies open connections all the time, and a
    port picked inside that range can be a connection's local port when a
    front starts or a killed backend starts again (bind: address in use)."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        first_ephemeral = int(f.read().split()[0])
    rng = random.Random()
    ports = []
    while len(ports) < count:
        port = rng.randrange(10000, first_ephemeral)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


class Test(Checks):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.root = tempfile.mkdtemp(prefix="chring-availability-")
        self.etcd = EtcdServer()
        self.client = None
        self.processes = {}   # name -> Popen: watchers and checkers
        self.workspace = None
        self.backends = []    # harness.Nginx, one process each
        self.ids = []
        self.fronts = []      # harness.Nginx
        self.front_ports = []
        self.proxies = []
        self.conns = {}       # (front, pid) -> HTTPConnection
        self.wrk = []
        self.results = {"kill_to_skip_ms": [], "restart_to_back_ms": [], "moved": [],
                        "live_moved": 0}

    # -- processes --

    def spawn(self, name, argv):
        log = open(os.path.join(self.root, name + ".log"), "ab")
        self.processes[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                start_new_session=True)
        log.close()

    def out(self, f):
        return os.path.join(self.root, "front%d.ring" % f)

    def start_checker(self, c):
        argv = [self.args.chring, "health", "--etcd", self.etcd.url, "--prefix", PREFIX,
                "--name", "checker-%d" % c, "--interval", "0.1", "--probe-timeout", "0.5",
                "--rise", "2", "--fall", "2", "--report-ttl", "2"]
        if c == CHECKERS:
            argv += ["--address-map", os.path.join(self.root, "through-proxies.map")]
        self.spawn("checker-%d" % c, argv)

    def backend_body(self, i):
        return ("  server { listen %s; default_type text/plain; return 200 '%s'; }"
                % (self.ids[i], self.ids[i]))

    def front_body(self, f):
        servers = "".join("    server %s max_fails=0;\n" % i for i in self.ids)
        return """
  upstream ring {
    chring $arg_k file=%s check=50ms;
%s  }
  server {
    listen 127.0.0.1:%d reuseport;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    location / {
      proxy_pass http://ring;
      proxy_next_upstream error timeout;
      proxy_connect_timeout 1s;
      proxy_read_timeout 5s;
      add_header X-Chring-Availability $chring_availability always;
      add_header X-Upstream $upstream_addr always;
      add_header X-Worker $pid always;
    }
  }""" % (self.out(f), servers, self.front_ports[f])

    def start(self):
        sys.path.insert(0, self.args.nginx_tests)
        import harness  # bindings/nginx/tests: nginx instances on loopback
        self.harness = harness
        self.etcd.start()
        self.client = EtcdClient(self.etcd.url)
        ports = listen_ports(BACKENDS + FRONTS)
        self.ids = ["127.0.0.1:%d" % p for p in ports[:BACKENDS]]
        self.front_ports = ports[BACKENDS:]
        self.workspace = harness.Workspace(self.args.nginx)
        for i in range(BACKENDS):
            inst = self.workspace.nginx("backend%d" % i, workers=1, main_extra="master_process off;")
            inst.start(self.backend_body(i))
            self.backends.append(inst)
        members = os.path.join(self.root, "members.ring")
        with open(members, "w") as f:
            f.write("".join("%s 1\n" % i for i in self.ids))
        r = self.chring("apply", members, *UNGUARDED)
        if r.returncode != 0:
            raise RuntimeError("chring etcd apply: %s" % r.stderr)
        for i in range(BACKENDS):
            self.proxies.append(TcpProxy(ports[i]).start())
        with open(os.path.join(self.root, "through-proxies.map"), "w") as f:
            f.write("".join("%s 127.0.0.1:%d\n" % (i, p.port) for i, p in zip(self.ids, self.proxies)))
        for f in range(FRONTS):
            self.spawn("watch%d" % f, [self.args.chring, "watch", "--etcd", self.etcd.url, "--prefix", PREFIX,
                                       "--out", self.out(f), "--name", "front%d" % f] + UNGUARDED)
        for c in range(1, CHECKERS + 1):
            self.start_checker(c)
        self.wait_until(lambda: all(os.path.exists(self.out(f)) for f in range(FRONTS)),
                        "the watchers published their files")
        for f in range(FRONTS):
            inst = self.workspace.nginx("front%d" % f, modules=[self.args.nginx_module], workers=WORKERS)
            inst.start(self.front_body(f))
            self.fronts.append(inst)
            self.connect_workers(f)

    def connect_workers(self, f):
        """One keep-alive connection to each worker of front f, told apart by $pid."""
        found = {}
        for _ in range(400):
            if len(found) == WORKERS:
                break
            conn = http.client.HTTPConnection("127.0.0.1", self.front_ports[f], timeout=30)
            conn.request("GET", "/")
            resp = conn.getresponse()
            resp.read()
            pid = resp.getheader("X-Worker")
            if pid in found:
                conn.close()
            else:
                found[pid] = conn
        if len(found) != WORKERS:
            raise RuntimeError("front%d: reached %d of %d workers" % (f, len(found), WORKERS))
        for pid, conn in found.items():
            self.conns[(f, pid)] = conn

    def stop(self):
        for p in self.wrk:
            if p.poll() is None:
                p.kill()
                p.wait()
        for conn in self.conns.values():
            conn.close()
        for p in self.processes.values():
            try:
                etcd_server.end_group(p, timeout=10)
            except Exception as e:  # keep stopping the others
                print("warning: stopping a process: %s" % e)
        for p in self.proxies:
            p.stop()
        if self.client is not None:
            self.client.close()
        if self.workspace is not None:
            self.workspace.__exit__(None, None, None)
        self.etcd.cleanup()

    def logs_tail(self, chars=1500):
        return "\n".join(log_tails(self.root, chars))

    def chring(self, *args):
        return subprocess.run([self.args.chring, "etcd", "--etcd", self.etcd.url, "--prefix", PREFIX] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=WAIT)

    def wait_until(self, done, what, seconds=WAIT):
        deadline = time.monotonic() + seconds
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError("not within %.0f s: %s\n%s" % (seconds, what, self.logs_tail()))
            time.sleep(0.02)

    def kill_backend(self, i):
        inst = self.backends[i]
        os.kill(inst.process.pid, signal.SIGKILL)
        inst.process.wait()
        inst._output.close()
        inst.process = None

    # -- requests --

    def get(self, worker, key):
        """(body, upstream addresses, digest) of worker (front, pid) for `key`."""
        conn = self.conns[worker]
        conn.request("GET", "/?k=" + key)
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace")
        if resp.getheader("X-Worker") != worker[1]:
            raise RuntimeError("connection of worker %s answered by %s" % (worker, resp.getheader("X-Worker")))
        if resp.status != 200:
            body = "HTTP %d" % resp.status
        return body, (resp.getheader("X-Upstream") or "").split(", "), resp.getheader("X-Chring-Availability")

    def sweep(self):
        """Every key through every worker: {worker: {key: (body, tried, digest)}}."""
        return {w: {k: self.get(w, k) for k in KEYS} for w in sorted(self.conns)}

    def routed_as(self, owners, digest=None):
        """What differs from: every worker answers every key from owners[key]
        in one try (with `digest`, when given)."""
        wrong = []
        for w, answers in self.sweep().items():
            for k, (body, tried, got) in answers.items():
                if body != owners[k] or tried != [owners[k]] or (digest and got != digest):
                    wrong.append("worker %s %s: %s via %s, digest %s; want %s%s"
                                 % (w, k, body, tried, got, owners[k], ", digest " + digest if digest else ""))
        return wrong

    def wait_routed_as(self, owners, digest, what):
        wrong = []
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            wrong = self.routed_as(owners, digest)
            if not wrong:
                break
            time.sleep(0.05)
        return self.check(not wrong, what, "\n    ".join(wrong[:5]))

    def files_digests(self):
        """The %%availability digest of each watcher's file (none: nothing down)."""
        out = []
        for f in range(FRONTS):
            with open(self.out(f)) as fh:
                m = re.search(r"^%%availability (0x[0-9a-f]{16})", fh.read(), re.M)
            out.append(m.group(1) if m else NOTHING_DOWN)
        return out

    def files_down(self):
        """The ids each watcher's file marks down."""
        out = []
        for f in range(FRONTS):
            with open(self.out(f)) as fh:
                out.append(sorted(DOWN_LINE.findall(fh.read())))
        return out

    def health(self):
        """{checker name: its list of members down} from etcd."""
        kvs, _ = self.client.get_prefix(PREFIX + "/health/")
        return {json.loads(v)["checker"]: json.loads(v).get("down", []) for v in kvs.values()}

    # -- load --

    def start_wrk(self):
        script = os.path.join(self.root, "keys.lua")
        with open(script, "w") as f:
            f.write("""local keys = {%s}
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/?k=" .. keys[n %% #keys + 1])
end
delay = function() return 1 end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%%d status=%%d connect=%%d read=%%d write=%%d timeout=%%d\\n",
    summary.requests, e.status, e.connect, e.read, e.write, e.timeout))
end
""" % ", ".join('"%s"' % k for k in KEYS))
        for f in range(FRONTS):
            out = open(os.path.join(self.root, "wrk%d.out" % f), "wb")
            self.wrk.append(subprocess.Popen(["wrk", "-t1", "-c2", "-d600s", "-s", script,
                                              "http://127.0.0.1:%d" % self.front_ports[f]],
                                             stdout=out, stderr=subprocess.STDOUT))
            out.close()

    def stop_wrk(self):
        totals = {}
        for f, p in enumerate(self.wrk):
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            with open(os.path.join(self.root, "wrk%d.out" % f)) as fh:
                text = fh.read()
            m = re.search(r"RESULT (.*)", text)
            if not m:
                raise RuntimeError("wrk on front%d printed no result:\n%s" % (f, text))
            for kv in m.group(1).split():
                k, v = kv.split("=")
                totals[k] = totals.get(k, 0) + int(v)
        return totals

    # -- the scenario --

    def run(self):
        self.start()
        owners = {k: self.get(w, k)[0] for w in [min(self.conns)] for k in KEYS}
        self.check(set(owners.values()) == set(self.ids), "the %d keys are spread over the %d backends"
                   % (len(KEYS), BACKENDS), "owners: %s" % sorted(set(owners.values())))
        self.wait_routed_as(owners, NOTHING_DOWN,
                            "every worker of both fronts routes every key to its owner, nothing down")
        self.start_wrk()
        for n in range(KILLS):
            self.kill_cycle(n, n % BACKENDS, owners)
        self.partition(owners)
        self.panic(owners)
        totals = self.stop_wrk()
        failed = totals["status"] + totals["connect"] + totals["read"] + totals["write"] + totals["timeout"]
        self.results["requests"] = totals["requests"]
        self.results["failed"] = failed
        self.check(totals["requests"] > 0 and failed == 0,
                   "wrk: %d requests through both fronts, %d failed (non-2xx %d, socket errors %d)"
                   % (totals["requests"], failed, totals["status"], failed - totals["status"]))
        bad = [(i.prefix, l) for i in self.workspace.instances for l in i.bad_log_lines()]
        self.check(not bad, "no crash, [alert] or [crit] in the nginx logs", "\n".join("%s: %s" % b for b in bad))

    def kill_cycle(self, n, victim, owners):
        dead = self.ids[victim]
        mine = [k for k in KEYS if owners[k] == dead]
        t0 = time.monotonic()
        self.kill_backend(victim)
        pending, skip, failures = set(self.conns), {}, []
        while pending and time.monotonic() - t0 < WAIT:
            for w in sorted(pending):
                answers = [self.get(w, k) for k in mine[:2]]
                failures += [a for a in answers if a[0].startswith("HTTP")]
                if all(tried == [body] and body != dead for body, tried, _ in answers):
                    skip[w] = time.monotonic() - t0
                    pending.discard(w)
        self.check(not pending and not failures,
                   "kill %d (%s): every worker skips it (%.0f ms), no request failed"
                   % (n + 1, dead, 1000 * max(skip.values() or [0])),
                   "still trying it: %s; failed: %s" % (sorted(pending), failures[:3]))
        if pending:
            raise RuntimeError("kill %d: the fleet never skipped %s\n%s" % (n + 1, dead, self.logs_tail()))
        self.results["kill_to_skip_ms"].append(round(1000 * max(skip.values()), 1))
        # every key: the dead backend's elsewhere, the others on their owner, one digest
        answers = self.sweep()
        digests = {a[2] for per in answers.values() for a in per.values()}
        wrong, moved = [], set()
        for w, per in answers.items():
            for k, (body, tried, _) in per.items():
                if owners[k] == dead:
                    moved.add(k)
                    if body == dead or body.startswith("HTTP") or tried != [body]:
                        wrong.append("worker %s %s (of %s): %s via %s" % (w, k, dead, body, tried))
                elif body != owners[k] or tried != [body]:
                    self.results["live_moved"] += 1
                    wrong.append("worker %s %s (of %s): %s via %s" % (w, k, owners[k], body, tried))
        self.results["moved"].append(len(moved))
        files = self.files_digests()
        self.check(not wrong and len(digests) == 1 and NOTHING_DOWN not in digests,
                   "kill %d: its %d keys on other backends, every other key on its owner, digest %s"
                   % (n + 1, len(moved), ",".join(sorted(d or "none" for d in digests))),
                   "\n    ".join(wrong[:5]))
        self.check(files == [next(iter(digests))] * FRONTS and self.files_down() == [[dead]] * FRONTS,
                   "kill %d: both files mark %s down, with the digest nginx answers with" % (n + 1, dead),
                   "files: %s, marked %s" % (files, self.files_down()))
        t1 = time.monotonic()
        self.backends[victim].start(self.backend_body(victim))
        if self.wait_routed_as(owners, NOTHING_DOWN,
                               "kill %d: restarted, every key is back on exactly its old backend" % (n + 1)):
            self.results["restart_to_back_ms"].append(round(1000 * (time.monotonic() - t1), 1))

    def partition(self, owners):
        for p in self.proxies:
            p.cut("drop")
        self.wait_until(lambda: sorted(self.health().get("checker-%d" % CHECKERS, [])) == sorted(self.ids),
                        "checker %d lists every backend down" % CHECKERS)
        self.check(True, "partition: checker %d, cut off, lists the %d backends down" % (CHECKERS, BACKENDS))
        self.settle()
        self.check(self.files_down() == [[]] * FRONTS,
                   "partition: 1 checker of 3 is no majority, no file marks anything down",
                   "marked: %s" % self.files_down())
        wrong = self.routed_as(owners, NOTHING_DOWN)
        self.check(not wrong, "partition: every key on its owner, digest of nothing down",
                   "\n    ".join(wrong[:5]))
        # checker 2 killed: its key goes with its lease, 1 of 2 live checkers is no majority
        os.kill(self.processes["checker-2"].pid, signal.SIGKILL)
        self.processes["checker-2"].wait()
        self.wait_until(lambda: "checker-2" not in self.health(), "checker 2's key expired")
        self.check(sorted(self.health()) == ["checker-1", "checker-3"],
                   "partition: checker 2 killed, its key is gone with its lease")
        self.settle()
        self.check(self.files_down() == [[]] * FRONTS and not self.routed_as(owners, NOTHING_DOWN),
                   "partition: 1 of 2 live checkers is no majority: nothing down, every key on its owner",
                   "marked: %s" % self.files_down())
        for p in self.proxies:
            p.restore()
        self.start_checker(2)
        self.wait_until(lambda: all(v == [] for v in self.health().values()) and len(self.health()) == CHECKERS,
                        "the 3 checkers see every backend up")

    def file_revision(self, f):
        with open(self.out(f)) as fh:
            m = re.search(r"^%%revision (\d+)", fh.read(), re.M)
        return int(m.group(1)) if m else 0

    def settle(self, seconds=3.0):
        """Gives the watchers time to publish what etcd holds now: until each
        file carries etcd's revision, or `seconds` (a watcher need not write
        a file again when the ring it would write is the same)."""
        revision = self.client.revision()
        deadline = time.monotonic() + seconds
        while (time.monotonic() < deadline
               and not all(self.file_revision(f) >= revision for f in range(FRONTS))):
            time.sleep(0.05)

    def panic(self, owners):
        marks = self.log_marks()
        for i in self.ids[:3]:
            r = self.chring("down", i, "--for", "120s")
            self.check(r.returncode == 0, "panic: chring etcd down %s --for 120s" % i, r.stderr)
        self.wait_until(lambda: self.files_down() == [sorted(self.ids[:3])] * FRONTS,
                        "both files mark 3 backends down")
        self.check(True, "panic: both watchers publish the 3 marks")
        panic_digest = None
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            answers = self.sweep()
            digests = {a[2] for per in answers.values() for a in per.values()}
            if len(digests) == 1 and NOTHING_DOWN not in digests:
                panic_digest = digests.pop()
                break
            time.sleep(0.05)
        self.check(panic_digest is not None and self.files_digests() == [panic_digest] * FRONTS,
                   "panic: every worker serves the marked ring, with the files' digest (%s)" % panic_digest,
                   "files: %s" % self.files_digests())
        wrong = self.routed_as(owners, panic_digest)
        self.check(not wrong, "panic: 3 of 4 down is more than 50%: every key on its owner as if unmarked",
                   "\n    ".join(wrong[:5]))
        logged = [len([l for l in inst.log_text()[mark:].splitlines() if "[warn]" in l and "panic" in l])
                  for inst, mark in zip(self.fronts, marks)]
        self.check(logged == [WORKERS] * FRONTS, "panic: each worker of both fronts logs it once (%s)" % logged)
        for i in self.ids[:3]:
            r = self.chring("up", i)
            self.check(r.returncode == 0, "panic: chring etcd up %s" % i, r.stderr)
        self.wait_routed_as(owners, NOTHING_DOWN, "panic over: every key on its owner, nothing down")

    def log_marks(self):
        return [len(inst.log_text()) for inst in self.fronts]


def main():
    args = fleet_arguments(fleet_parser(__doc__.split("\n")[0]))
    why = fleet_missing(args, [["health"], ["etcd", "down"]], {"wrk": "the load"})
    t, seconds = run_fleet(why, lambda: Test(args))
    if t is None:
        return SKIP
    results = dict(t.results, seconds=seconds)
    skips = results["kill_to_skip_ms"]
    if skips:
        results.update({"kill_to_skip_p50_ms": percentile(skips, 50), "kill_to_skip_p99_ms": percentile(skips, 99)})
        print("kill-to-skip over %d kills: p50 %.0f ms, p99 %.0f ms; restart-to-back p50 %.0f ms; "
              "keys moved per kill %s, keys of live backends moved %d; wrk %s requests, %s failed"
              % (len(skips), results["kill_to_skip_p50_ms"], results["kill_to_skip_p99_ms"],
                 percentile(results["restart_to_back_ms"], 50) or 0, results["moved"], results["live_moved"],
                 results.get("requests"), results.get("failed")))
    return finish(t, "availability", results, args.results_dir)


if __name__ == "__main__":
    sys.exit(main())
