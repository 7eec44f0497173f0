#!/usr/bin/env python3
"""Acknowledged rollouts: a fleet of 20 `chring watch` processes reports
itself in etcd; `chring etcd ... --wait` waits for it, `chring etcd status`
shows it, under faults (meson test etcd-acks, suite 'etcd').

    test_acks.py --chring CHRING --nginx NGINX --nginx-module MODULE \\
                 --nginx-tests bindings/nginx/tests [--results-dir DIR]

The fleet, on loopback: a real etcd (etcd_server.py); 20 watchers, each
with its own file, named w00..w19 (PREFIX.status/wNN); w00..w03 confirm
with `--confirm 'curl ... | grep -qx "$CHRING_FINGERPRINT"'` against one
nginx with the chring module, one upstream per confirming watcher following
that watcher's file (`$chring_fingerprint_<upstream>` in a status
location); w17 runs without the build's plugins; w18 has a long report TTL
(it is stopped), w19 a short one (it is killed).

100 changes (apply, add, remove, set-weight, each with --wait): after each
one `--wait` must return 0 and `status --format json` must show every
process holding the new ring (published, revision >= the change's, its
fingerprint). Faults on the way:
  - etcd SIGKILLed and restarted: the next change converges;
  - w18 SIGSTOPped: `--wait=2` times out (exit 3) naming it, `status` shows
    it lagging (exit 3); SIGCONT, the next change converges;
  - a ring with a plugin's hasher (murmur3): w17 refuses it, `--wait`
    exits 3 at once naming w17 and its reason, `status` shows w17 refused;
    a value written by hand that no process can read: `status` shows every
    process refusing it, with the key; both repaired;
  - w19 SIGKILLed: `--wait` returns once its lease has expired, `status`
    no longer lists it.
The time from starting each command to `--wait` returning is measured
(p50/p99/max) and written to RESULTS-acks.json in --results-dir.

Ends with "N passed, N failed"; exits 77 (skipped) when etcd, the CLI's etcd
commands, nginx with the module or curl is missing.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import etcd_server  # noqa: E402
from etcd_server import EtcdServer  # noqa: E402
from test_etcd import Checks, escape, finish, fleet_arguments, fleet_missing, fleet_parser, log_tails, percentile, run_fleet  # noqa: E402

SKIP = 77
PREFIX = "/chring-test/acks"
STATUS_DIR = PREFIX + ".status/"
WATCHERS = 20
CONFIRMING = 4     # w00..w03
NO_PLUGINS = 17    # refuses a plugin's hasher
STOPPED = 18       # SIGSTOPped for a while: a long TTL
KILLED = 19        # SIGKILLed: a short TTL
CHANGES = 100
WAIT = 60          # --wait's timeout on the normal changes
IDS = ["10.0.%d.%d:80" % (i // 8, i % 8 + 1) for i in range(40)]  # nginx `server`s too
# The guard rails are etcd_cli_test.py's (guard): here every change (random
# applies, an options change) is meant.
UNGUARDED = ["--max-moved", "100%"]
ADDED = re.compile(r": revision (\d+), fingerprint (0x[0-9a-f]{16}), ")


def name(i):
    return "w%02d" % i


class Test(Checks):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.root = tempfile.mkdtemp(prefix="chring-acks-")
        self.etcd = EtcdServer()
        self.watchers = {}  # index -> Popen
        self.workspace = None
        self.nginx_port = None
        self.rng = random.Random(20)
        self.model = {}  # id -> weight, what etcd holds
        self.times = []  # seconds from starting a change to --wait returning, normal changes
        self.waits = []  # of which waiting (--wait's own "done in")
        self.faults = {}
        self.plugin_env = {"CHRING_PLUGIN_PATH": args.plugin_path} if args.plugin_path else {}

    # -- processes --

    def env(self, plugins=True):
        env = dict(os.environ)
        env.pop("LD_LIBRARY_PATH", None)  # chring finds libchring through its rpath
        env.pop("CHRING_PLUGIN_PATH", None)
        if plugins:
            env.update(self.plugin_env)
        return env

    def out(self, i):
        return os.path.join(self.root, name(i) + ".ring")

    def start_watcher(self, i):
        argv = [self.args.chring, "watch", "--etcd", self.etcd.url, "--prefix", PREFIX, "--out", self.out(i),
                "--name", name(i), "--keepalive", "1", "--interval-max", "1"] + UNGUARDED + [
                "--report-ttl", "30" if i == STOPPED else "2" if i == KILLED else "10"]
        if i < CONFIRMING:
            argv += ["--confirm", "curl -fsS --max-time 2 http://127.0.0.1:%d/fp/c%d | grep -qx \"$CHRING_FINGERPRINT\""
                     % (self.nginx_port, i)]
        log = open(os.path.join(self.root, name(i) + ".log"), "ab")
        self.watchers[i] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            env=self.env(plugins=i != NO_PLUGINS), start_new_session=True)
        log.close()

    def start(self):
        self.etcd.start()
        self.apply_model({i: 1 for i in IDS[:10]}, wait=False)
        self.nginx_port = etcd_server.free_ports(1)[0]
        for i in range(WATCHERS):
            self.start_watcher(i)
        deadline = time.monotonic() + 60
        while not all(os.path.exists(self.out(i)) for i in range(CONFIRMING)):
            if time.monotonic() > deadline:
                raise RuntimeError("the confirming watchers published no file:\n" + self.logs_tail())
            time.sleep(0.05)
        sys.path.insert(0, self.args.nginx_tests)
        import harness  # bindings/nginx/tests: nginx instances on loopback
        self.workspace = harness.Workspace(self.args.nginx)
        inst = self.workspace.nginx("acks", modules=[self.args.nginx_module], workers=1, env=self.env())
        servers = "".join("    server %s;\n" % i for i in IDS)
        upstreams = "".join("  upstream ring_c%d {\n    chring $request_uri file=%s check=50ms;\n%s  }\n"
                            % (i, self.out(i), servers) for i in range(CONFIRMING))
        locations = "".join("    location = /fp/c%d { return 200 \"$chring_fingerprint_ring_c%d\"; }\n" % (i, i)
                            for i in range(CONFIRMING))
        inst.start("%s  server {\n    listen 127.0.0.1:%d;\n%s  }" % (upstreams, self.nginx_port, locations))
        self.nginx = inst

    def stop(self):
        for p in self.watchers.values():
            try:
                etcd_server.end_group(p, timeout=10)
            except Exception as e:  # keep stopping the others
                print("warning: stopping a watcher: %s" % e)
        if self.workspace is not None:
            self.workspace.__exit__(None, None, None)
        self.etcd.cleanup()

    def logs_tail(self, chars=1500):
        return "\n".join(log_tails(self.root, chars))

    # -- chring etcd --

    def chring(self, *args, timeout=WAIT + 60):
        cmd = [self.args.chring, "etcd", "--etcd", self.etcd.url, "--prefix", PREFIX] + list(args)
        if args[0] not in ("status", "show"):
            cmd += UNGUARDED
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=self.env())
        return r, time.monotonic() - t0

    def status(self):
        r, _ = self.chring("status", "--format", "json")
        try:
            return r.returncode, json.loads(r.stdout)
        except ValueError:
            return r.returncode, {"error": r.stdout + r.stderr}

    def apply_model(self, model, wait=True, options="", timeout=WAIT):
        path = os.path.join(self.root, "apply.ring")
        with open(path, "w") as f:
            f.write(options + "".join("%s %d\n" % (escape(i.encode()), w) for i, w in sorted(model.items())))
        r, seconds = self.chring("apply", path, *(["--wait=%s" % timeout] if wait else []))
        if r.returncode in (0, 3):
            self.model = dict(model)
        return r, seconds

    def change(self, k):
        """One random change with --wait: (CompletedProcess, seconds, what)."""
        kind = ["apply", "add", "remove", "set-weight"][k % 4]
        absent = [i for i in IDS if i not in self.model]
        if kind == "add" and absent:
            i = self.rng.choice(absent)
            r, s = self.chring("add", i, "--weight", str(self.rng.randint(1, 5)), "--wait=%d" % WAIT)
            if r.returncode in (0, 3):
                self.model[i] = 1
            return r, s, "add " + i
        if kind == "remove" and len(self.model) > 5:
            i = self.rng.choice(sorted(self.model))
            r, s = self.chring("remove", i, "--wait=%d" % WAIT)
            if r.returncode in (0, 3):
                del self.model[i]
            return r, s, "remove " + i
        if kind == "set-weight" and self.model:
            i = self.rng.choice(sorted(self.model))
            w = self.model[i] % 5 + 1
            r, s = self.chring("set-weight", i, str(w), "--wait=%d" % WAIT)
            if r.returncode in (0, 3):
                self.model[i] = w
            return r, s, "set-weight %s %d" % (i, w)
        model = dict(self.model)
        for i in self.rng.sample(IDS, 6):
            if i in model and len(model) > 5 and self.rng.random() < 0.5:
                del model[i]
            else:
                model[i] = self.rng.randint(1, 5)
        r, s = self.apply_model(model)
        return r, s, "apply (%d members)" % len(model)

    # -- what the fleet reports --

    def alive(self):
        return [i for i, p in self.watchers.items() if p.poll() is None]

    def converged_after(self, k, what, r, seconds):
        """The change went through, --wait returned 0, and status shows every
        live process on its ring."""
        m = ADDED.search(r.stdout)
        ok = self.check(r.returncode == 0 and m is not None and "done in " in r.stdout,
                        "change %d (%s): --wait returned 0 in %.2f s" % (k, what, seconds),
                        "exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
        if not ok or m is None:
            return False
        rev, fp = int(m.group(1)), m.group(2)
        code, doc = self.status()
        procs = {p["name"]: p for p in doc.get("processes", [])}
        want = {name(i) for i in self.alive()}
        behind = {n: (p["state"], p["revision"], p["fingerprint"]) for n, p in procs.items()
                  if p["verdict"] != "holds" or p["revision"] < rev or p["fingerprint"] != fp}
        self.check(code == 0 and not behind and want <= set(procs),
                   "change %d: status: all %d processes on revision >= %d, fingerprint %s"
                   % (k, len(procs), rev, fp),
                   "exit %d, behind %s, missing %s" % (code, behind, sorted(want - set(procs))))
        self.times.append(seconds)
        done = re.search(r"^done in ([0-9.]+) s", r.stdout, re.M)
        if done:
            self.waits.append(float(done.group(1)))
        return True

    # -- faults --

    def fault_etcd(self, k):
        t0 = time.monotonic()
        self.etcd.kill()
        time.sleep(0.5)
        self.etcd.start()
        self.faults["etcd_restart_seconds"] = round(time.monotonic() - t0, 2)
        r, s, what = self.change(k)
        self.check(r.returncode == 0, "etcd killed and restarted: the next change converges (%.2f s)" % s,
                   r.stdout + r.stderr)
        return r, s, what

    def fault_stop(self, k):
        p = self.watchers[STOPPED]
        os.killpg(p.pid, signal.SIGSTOP)
        try:
            new = next(i for i in IDS if i not in self.model)
            r, s = self.chring("add", new, "--weight", "1", "--wait=2")
            if r.returncode in (0, 3):
                self.model[new] = 1
            self.check(r.returncode == 3 and "timed out after" in r.stdout
                       and re.search(r"^  %s: holds revision \d+$" % name(STOPPED), r.stdout, re.M),
                       "%s stopped: --wait=2 times out naming it (exit 3)" % name(STOPPED),
                       "exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
            code, doc = self.status()
            v = {p_["name"]: p_["verdict"] for p_ in doc.get("processes", [])}
            lagging = [n for n, x in v.items() if x != "holds"]
            self.check(code == 3 and lagging == [name(STOPPED)],
                       "status: %s lags, every other process holds the ring (exit 3)" % name(STOPPED),
                       "exit %d: %s" % (code, v))
        finally:
            os.killpg(p.pid, signal.SIGCONT)

    def fault_refuse(self, k):
        if not self.plugin_env:
            print("note: no --plugin-path: the refusal of a plugin's hasher is not run")
        else:
            model = dict(self.model)
            r, s = self.apply_model(model, options="%%hasher murmur3_32\n")
            self.check(r.returncode == 3 and "refused after" in r.stdout
                       and re.search(r"^  %s: refused revision \d+: .*murmur3" % name(NO_PLUGINS), r.stdout, re.M),
                       "a ring w17 cannot load: --wait exits 3 at once naming it and its reason (%.2f s)" % s,
                       "exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
            code, doc = self.status()
            procs = {p["name"]: p for p in doc.get("processes", [])}
            w17 = procs.get(name(NO_PLUGINS), {})
            self.check(code == 3 and w17.get("verdict") == "refused" and "murmur3" in (w17.get("detail") or ""),
                       "status: %s refused, with the reason" % name(NO_PLUGINS), "exit %d: %s" % (code, w17))
            # nginx keeps its ring's options (a file with other options is refused
            # there): the confirming watchers stay unconfirmed meanwhile.
            r, s = self.apply_model(model, options="%%hasher xxh3\n")
            self.check(r.returncode == 0, "back to the usual hasher: every process holds it", r.stdout + r.stderr)
        # A value no process can read: every one refuses it, with the key.
        bad = PREFIX + "/members/bad-value"
        self.etcd.put(bad, "12x")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            code, doc = self.status()
            v = [p["verdict"] for p in doc.get("processes", [])]
            if v and all(x == "refused" for x in v):
                break
            time.sleep(0.1)
        self.check(code == 3 and v and all(x == "refused" for x in v) and doc["ring"]["valid"] is False
                   and all(bad in (p["detail"] or "") for p in doc["processes"]),
                   "a malformed value: status shows all %d processes refusing it, naming the key" % len(v),
                   "exit %d: %s" % (code, doc))
        self.etcd.client().delete(bad)

    def fault_kill(self, k):
        p = self.watchers[KILLED]
        t0 = time.monotonic()
        etcd_server.end_group(p, sig=signal.SIGKILL)
        self.faults["killed"] = True
        r, s, what = self.change(k)
        self.check(r.returncode == 0 and "all %d processes hold" % (WATCHERS - 1) in r.stdout,
                   "%s killed: the next --wait returns once its lease expired (%.2f s)" % (name(KILLED), s),
                   r.stdout + r.stderr)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            code, doc = self.status()
            if name(KILLED) not in {x["name"] for x in doc.get("processes", [])}:
                break
            time.sleep(0.1)
        names = {x["name"] for x in doc.get("processes", [])}
        self.faults["killed_gone_seconds"] = round(time.monotonic() - t0, 2)
        self.check(name(KILLED) not in names and len(names) == WATCHERS - 1 and code == 0,
                   "status: %s is gone with its lease (%.1f s after the kill), the other %d hold the ring"
                   % (name(KILLED), self.faults["killed_gone_seconds"], len(names)), "exit %d: %s" % (code, doc))
        return r, s, what

    def run(self):
        self.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            code, doc = self.status()
            if code == 0 and len(doc.get("processes", [])) == WATCHERS:
                break
            time.sleep(0.1)
        self.check(code == 0 and len(doc.get("processes", [])) == WATCHERS,
                   "all %d watchers report the ring (%d confirming against nginx)" % (WATCHERS, CONFIRMING),
                   "exit %d: %s" % (code, doc))
        t0 = time.monotonic()
        for k in range(CHANGES):
            if k == 20:
                r, s, what = self.fault_etcd(k)
            elif k == 40:
                self.fault_stop(k)
                r, s, what = self.change(k)
            elif k == 60:
                self.fault_refuse(k)
                r, s, what = self.change(k)
            elif k == 80:
                r, s, what = self.fault_kill(k)
                continue
            else:
                r, s, what = self.change(k)
            self.converged_after(k, what, r, s)
        self.faults["changes_seconds"] = round(time.monotonic() - t0, 1)
        bad = self.nginx.bad_log_lines()
        self.check(not bad, "no crash, [alert] or [crit] in nginx's log", "\n".join(bad))
        confirmed = [open(os.path.join(self.root, name(i) + ".log"), errors="replace").read().count("confirmed revision")
                     for i in range(CONFIRMING)]
        self.check(all(c >= CHANGES // 2 for c in confirmed),
                   "the confirming watchers confirmed against nginx: %s" % confirmed)


def main():
    p = fleet_parser(__doc__.split("\n")[0])
    p.add_argument("--plugin-path", default=os.environ.get("CHRING_PLUGIN_PATH", ""))
    args = fleet_arguments(p)
    why = fleet_missing(args, [["etcd", "status"]], {"curl": "the --confirm command"})
    t, seconds = run_fleet(why, lambda: Test(args))
    if t is None:
        return SKIP
    results = {"watchers": WATCHERS, "confirming": CONFIRMING, "changes": CHANGES,
               "measured": len(t.times), "seconds": seconds, "faults": t.faults}
    if t.times:
        results.update({"p50_ms": round(1000 * percentile(t.times, 50), 1),
                        "p99_ms": round(1000 * percentile(t.times, 99), 1),
                        "max_ms": round(1000 * max(t.times), 1)})
        print("apply to --wait returning, %d changes, %d watchers: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (len(t.times), WATCHERS, results["p50_ms"], results["p99_ms"], results["max_ms"]))
    if t.waits:
        results.update({"wait_p50_ms": round(1000 * percentile(t.waits, 50), 1),
                        "wait_p99_ms": round(1000 * percentile(t.waits, 99), 1),
                        "wait_max_ms": round(1000 * max(t.waits), 1)})
        print("of which --wait itself (its 'done in'): p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (results["wait_p50_ms"], results["wait_p99_ms"], results["wait_max_ms"]))
    return finish(t, "acks", results, args.results_dir)


if __name__ == "__main__":
    sys.exit(main())
