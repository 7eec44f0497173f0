#!/usr/bin/env python3
"""Fleet membership from etcd: every process converges to the same ring, under faults.

    test_etcd.py --case CASE --chring CHRING --probe RINGFILE_PROBE ...

A fleet, all on loopback with random ports and temporary directories:

  etcd        a real etcd (tests/etcd/etcd_server.py), single member
  watcher0-2  three `chring watch --etcd URL --prefix P --out FILE`, each
              writing its own file; watcher2 reaches etcd through a TCP
              proxy (tests/etcd/tcp_proxy.py) that can cut the network
  go          a Go program on the Go binding's WatchFile, following
              watcher0's file (tests/etcd/goloader)
  lua         a LuaJIT program on the Lua binding's watch_file, following
              watcher1's file (tests/etcd/lua_loader.lua)
  nginx       nginx with the chring module, `chring $request_uri
              file=<watcher2's file> check=50ms`, 2 workers, each asked for
              $chring_fingerprint_ring / $chring_revision_ring through a
              status location (bindings/nginx/tests' helpers)

Each process reports (revision, fingerprint): the watchers on stderr
("published revision R fingerprint F"), the loaders on stdout, nginx in
the status answer, each timestamped on arrival. A driver changes the
membership with etcd transactions: add, remove, reweight, or a batch of
10 changes, each one transaction. The check: read etcd's state, write the
ring file it stands for (the data model: <prefix>/members/<escaped id> ->
"<weight> [zone]", <prefix>/options -> option directives), compute its
fingerprint with the C library (ringfile_probe), and require every process
to report that fingerprint and etcd's revision. The wait for it is
bounded (30 s): a process that never converges fails the check; how long
each took is measured and reported (the output, RESULTS-<case>.json, with
whether it was within the 2 s target), never asserted, so a loaded machine
or cases running side by side cannot fail it.

Cases (one per meson test):

  stream        1,000 random changes at ~40/s; the check; p50/p99 lag from
                each change to each process reporting it, per kind of
                process; every (revision, fingerprint) any process reported
                is the fingerprint of etcd's state at that revision
  kill-etcd     SIGKILL etcd in the middle of a stream of changes, restart
                it on the same data dir; every watcher logs a re-list
  compact       SIGSTOP watcher1 and watcher2, 50 changes, compact etcd
                past them, break watcher2's connections (its watch must
                resume from a compacted revision), SIGCONT: nothing missed
  restore       restore etcd from a snapshot taken 100 changes earlier (the
                revision goes back): every process follows to the old state,
                then to changes that reuse the revision numbers
  cut           watcher2's network to etcd stalls for 30 s while changes
                go on: the others converge, watcher2 and nginx keep the old
                ring; restored, they catch up
  malformed     bad values put with etcdctl (weight, escape, duplicate id,
                options): every process keeps the last good fingerprint,
                each watcher logs the refused revision, a valid value
                recovers
  kill-watcher  SIGKILL watcher0 eight times during a burst of changes
                (600 extra members so each write takes time), restarting it;
                a reader parsing watcher0's file in a loop never sees a
                partial file, nor does the Go loader
  burst         10,000 changes (one transaction each) offered at 1,000/s
                from 8 clients: watcher memory (RSS sampled every 100 ms)
                stays bounded, every process converges to the last revision

--secure runs any case over TLS and authentication: etcd serves https only
with the test CA's certificate and --client-cert-auth, and has `auth
enable` with the least-privilege setup of docs/etcd.md (section 5): the
watchers and `chring etcd show` run as a user with a read-only role on the
prefix, the drivers as one with a read-write role on it, etcdctl (by hand:
snapshots, malformed values) as root; every client presents the client
certificate. watcher2's TLS connections pass through the proxy.

After the faults that disturb a process, the harness first waits (bounded)
for the fleet to catch up and reports how long that took, then makes 20
more changes and applies the check. Lags go to the output and to
RESULTS-<case>.json (RESULTS-<case>-tls.json with --secure) in
--results-dir. Ends with "N passed, N failed"; exit status 0 when every
check passed, 77 when something the fleet needs is missing (etcd, etcdctl,
`chring watch`, Go, LuaJIT, nginx with the module; openssl with --secure).
"""

import argparse
import bisect
import http.client
import json
import math
import os
import random
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import etcd_server  # noqa: E402
from etcd_server import EtcdError, EtcdServer  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

SKIP = 77
TARGET_SECONDS = 2.0  # the convergence target from the last change: measured, not asserted
WAIT_SECONDS = 30.0  # how long a check waits at most, to measure a late convergence
PREFIX = "/chring-test/fleet"
MEMBERS = PREFIX + "/members/"
OPTIONS = PREFIX + "/options"
NGINX_CHECK = "50ms"

PUBLISHED = re.compile(r"published revision (\d+) fingerprint (0[xX][0-9a-fA-F]{16})")
REFUSED = re.compile(r"refused revision (\d+)")
RELISTING = re.compile(r"re-listing after")
REAUTHENTICATING = re.compile(r"in time: authenticating again before the next request")
REPORTED = re.compile(r"^revision (\d+|nil) fingerprint (0[xX][0-9a-fA-F]{16})")


# -- the data model: ids and zones escaped as in a ring file ---------------------

SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:")


def escape(raw):
    """Bytes as a ring-file field: every byte outside [A-Za-z0-9-._:] as %XX
    (more than the canonical form escapes; a reader decodes any %XX)."""
    return "".join(chr(b) if b in SAFE else "%%%02X" % b for b in raw)


def unescape(field):
    """A ring-file field (bytes) decoded; ValueError on a bad escape."""
    out, i = bytearray(), 0
    while i < len(field):
        if field[i:i + 1] == b"%":
            digits = field[i + 1:i + 3]
            if len(digits) != 2 or not all(c in b"0123456789abcdefABCDEF" for c in digits):
                raise ValueError("bad escape in %r" % field)
            out.append(int(digits, 16))
            i += 3
        else:
            out.append(field[i])
            i += 1
    return bytes(out)


def member_value(weight, zone):
    return "%d" % weight + (" " + escape(zone) if zone else "")


def ring_text(kvs):
    """The ring file etcd's state (the prefix's keys, bytes) stands for, or
    None when a key cannot be read as the data model says (the library
    judges everything else: weights, duplicates, options)."""
    lines = []
    options = kvs.get(OPTIONS.encode())
    if options is not None:
        lines.append(options.decode(errors="replace").rstrip("\n"))
    for key in sorted(kvs):
        if key == OPTIONS.encode():
            continue
        if not key.startswith(MEMBERS.encode()):
            return None  # neither a member nor the options
        try:
            member = unescape(key[len(MEMBERS):])
        except ValueError:
            return None
        fields = kvs[key].decode(errors="replace").split()
        if len(fields) not in (1, 2) or not member:
            return None
        zone = ""
        if len(fields) == 2:
            try:
                zone = escape(unescape(fields[1].encode()))
            except ValueError:
                return None
        lines.append(" ".join([escape(member), fields[0]] + ([zone] if zone else [])))
    return "".join(l + "\n" for l in lines)


def read_state(path):
    """(revision, fingerprint) from a ring file's directives, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096).decode(errors="replace")
    except OSError:
        return None
    rev = re.search(r"^%%revision (\d+)$", head, re.M)
    fp = re.search(r"^%%fingerprint (0[xX][0-9a-fA-F]{16})$", head, re.M)
    if not rev or not fp:
        return None
    return int(rev.group(1)), fp.group(1).lower()


def percentile(values, q):
    """Nearest rank: the smallest value with at least q% of them at or below it."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s), max(1, math.ceil(q / 100.0 * len(s)))) - 1]


def log_tails(root, chars):
    """Each *.log file in `root`, by name, as one string: a line "--- NAME"
    and the file's last `chars` characters."""
    out = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".log"):
            with open(os.path.join(root, name), errors="replace") as f:
                out.append("--- %s\n%s" % (name, f.read()[-chars:]))
    return out


# -- processes ------------------------------------------------------------------


class Reporter:
    """What one process reported: (time, revision, fingerprint), in order of
    arrival, consecutive repeats dropped; and its error lines."""

    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.lock = threading.Lock()
        self.history = []
        self.errors = []

    def record(self, t, revision, fingerprint):
        fingerprint = fingerprint.lower()
        with self.lock:
            if not self.history or self.history[-1][1:] != (revision, fingerprint):
                self.history.append((t, revision, fingerprint))

    def error(self, t, line):
        with self.lock:
            self.errors.append((t, line))

    def latest(self):
        with self.lock:
            return self.history[-1][1:] if self.history else None

    def reporting_since(self, revision, fingerprint):
        """When it started reporting (revision, fingerprint), which it still
        reports; None when its last report is something else."""
        with self.lock:
            if self.history and self.history[-1][1:] == (revision, fingerprint):
                return self.history[-1][0]
        return None

    def entries(self, since=0.0, until=float("inf")):
        with self.lock:
            return [e for e in self.history if since <= e[0] <= until]

    def errors_since(self, since):
        with self.lock:
            return [l for t, l in self.errors if t >= since]


class Proc:
    """A child process in its own process group; the lines of one of its
    streams go to `on_line(time, text)` and, with the other stream, to its
    log file. stop() ends it whatever state it is in."""

    def __init__(self, name, argv, log_path, on_line, stream="stderr", env=None):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.on_line, self.stream, self.env = on_line, stream, env
        self.process = None
        self.reader = None
        self.log = None

    def start(self):
        self.log = open(self.log_path, "ab")
        out = {"stdout": subprocess.PIPE, "stderr": self.log}
        if self.stream == "stderr":
            out = {"stdout": self.log, "stderr": subprocess.PIPE}
        self.process = subprocess.Popen(self.argv, stdin=subprocess.PIPE, env=self.env,
                                        start_new_session=True, **out)
        pipe = self.process.stderr if self.stream == "stderr" else self.process.stdout
        self.reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.reader.start()
        return self

    def _read(self, pipe):
        for raw in pipe:
            t = time.monotonic()
            try:
                self.log.write(raw)
                self.log.flush()
            except ValueError:
                pass  # closed by stop() meanwhile
            self.on_line(t, raw.decode(errors="replace").rstrip("\n"))

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def signal(self, sig):
        etcd_server.signal_group(self.process, sig)

    def _finish(self, timeout, sig):
        etcd_server.end_group(self.process, timeout, sig)
        self.reader.join(timeout=10)
        for f in (self.process.stdin, self.process.stdout, self.process.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        self.log.close()
        self.process = None

    def stop(self, timeout=5.0):
        if self.process is None:
            return
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self._finish(timeout, signal.SIGTERM)

    def kill(self):
        """SIGKILL the whole group at once."""
        if self.process is None:
            return
        self._finish(10, signal.SIGKILL)

    def rss_kib(self):
        try:
            with open("/proc/%d/status" % self.process.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, AttributeError):
            pass
        return None


class Watcher:
    """One `chring watch` process and what it said."""

    def __init__(self, fleet, index, url):
        self.fleet = fleet
        self.name = "watcher%d" % index
        self.url = url
        self.dir = os.path.join(fleet.root, self.name)
        os.makedirs(self.dir)
        self.out = os.path.join(self.dir, "ring.txt")
        self.reporter = Reporter(self.name, "watcher")
        self.lock = threading.Lock()
        self.lines = []
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        # The guard rails are etcd_cli_test.py's (guard); here the driver's
        # changes (bulk transactions, an emptied prefix) must all be published.
        # --no-report: a report write moves etcd's revision, which the checks
        # compare with each process's (test_acks.py covers the reports).
        argv = [self.fleet.args.chring, "watch", "--etcd", self.url, "--prefix", PREFIX,
                "--out", self.out, "--max-moved", "100%", "--min-members", "0",
                "--no-report"] + self.fleet.etcd_flags("watcher")
        self.proc = Proc(self.name, argv, os.path.join(self.fleet.root, self.name + ".log"),
                         self._line, "stderr", self.fleet.env).start()
        return self

    def _line(self, t, line):
        with self.lock:
            self.lines.append((t, line))
        m = PUBLISHED.search(line)
        if m:
            self.reporter.record(t, int(m.group(1)), m.group(2))
        elif REFUSED.search(line):
            self.reporter.error(t, line)

    def lines_since(self, since, pattern):
        with self.lock:
            return [(t, l) for t, l in self.lines if t >= since and pattern.search(l)]

    def state(self):
        return read_state(self.out)


# --secure: the least-privilege setup of docs/etcd.md (section 5). root
# (etcdctl by hand: snapshots, compaction, malformed values); `admin`, a
# read-write role on the prefix (the drivers and the check's reads); `watcher`,
# a read-only role on the prefix (every `chring watch`, `chring etcd show`).
SECURE_USERS = {"root": "root-pw", "admin": "admin-pw", "watcher": "watcher-pw"}
SECURE_ROLES = {"admin": ("chring-fleet-admin", "readwrite"),
                "watcher": ("chring-fleet-watch", "read")}


class Fleet:
    """etcd, the proxy, three watchers, the Go and Lua loaders and nginx.
    With args.secure, etcd serves TLS only, asks every client for a
    certificate of the test CA, and has authentication on: every client
    (watchers, drivers, etcdctl, `chring etcd show`) presents the client
    certificate and a user."""

    def __init__(self, args, check, bulk=0):
        self.args, self.check = args, check
        self.root = tempfile.mkdtemp(prefix="chring-etcd-fleet-")
        self.pki = None
        self.password_files = {}
        if args.secure:
            try:
                self.pki = etcd_server.make_test_pki(os.path.join(self.root, "pki"))
            except BaseException:
                shutil.rmtree(self.root, ignore_errors=True)
                raise
            for user, password in SECURE_USERS.items():
                path = os.path.join(self.root, "pki", user + ".pw")
                with open(path, "w") as f:
                    f.write(password + "\n")
                os.chmod(path, 0o600)
                self.password_files[user] = path
        self.etcd = EtcdServer(tls=self.pki)
        self.proxy = None
        self.kv = None
        self.watchers = []
        self.loaders = []  # (Proc, Reporter)
        self.nginx = None
        self.workspace = None
        self.nginx_reporters = {}
        self.t_start = time.monotonic()
        self.convergences = []  # what each converge() measured
        self.poller = None
        self.polling = threading.Event()
        libdir = os.path.dirname(os.path.abspath(args.libchring))
        self.env = dict(os.environ, LD_LIBRARY_PATH=libdir + os.pathsep
                        + os.environ.get("LD_LIBRARY_PATH", ""),
                        CHRING_LIB=os.path.abspath(args.libchring),
                        LUA_PATH=args.lua_path + "/?.lua;;")
        self.ids = ids_pool(bulk)  # every id nginx has a `server` for, and the odd ones
        self.bulk = self.ids[DRIVEN:]
        self.driver = None

    # -- lifecycle --

    def start(self):
        self.t_start = time.monotonic()
        self.etcd.start()
        if self.args.secure:
            self._enable_auth()
        self.proxy = TcpProxy(self.etcd.client_port).start()
        self.kv = self.client("admin")
        self.driver = Driver(self.client("admin"), self.ids[:DRIVEN], random.Random(1700))
        self.driver.seed(12)
        # TLS goes through the proxy as any bytes do: watcher2 verifies
        # etcd's certificate (for 127.0.0.1) at the proxy's address.
        proxy_url = "%s://127.0.0.1:%d" % (self.etcd.url.split("://")[0], self.proxy.port)
        for i in range(3):
            url = proxy_url if i == 2 else self.etcd.url
            self.watchers.append(Watcher(self, i, url).start())
        deadline = time.monotonic() + WAIT_SECONDS
        while not all(w.state() for w in self.watchers):
            if time.monotonic() > deadline:
                raise RuntimeError("the watchers did not publish within %.0f s:\n%s"
                                   % (WAIT_SECONDS, self.logs_tail()))
            for w in self.watchers:
                if not w.proc.alive():
                    raise RuntimeError("%s exited:\n%s" % (w.name, self.logs_tail()))
            time.sleep(0.02)
        self._start_loader("go", [self.args.go_loader, "-file", self.watchers[0].out,
                                  "-interval", "20ms", "-for", "600s"])
        self._start_loader("lua", [self.args.luajit, self.args.lua_loader,
                                   self.watchers[1].out, "20", "600"])
        self._start_nginx(self.watchers[2].out)

    def _enable_auth(self):
        """The roles and users of SECURE_USERS, then `auth enable`; checks
        that the watchers' user may read the prefix and not write it."""
        for user, (role, permission) in SECURE_ROLES.items():
            self.etcd._etcdctl_ok("role", "add", role)
            self.etcd._etcdctl_ok("role", "grant-permission", role, permission, PREFIX + "/",
                                  "--prefix=true")
            self.etcd._etcdctl_ok("user", "add", user,
                                  "--new-user-password=" + SECURE_USERS[user])
            self.etcd._etcdctl_ok("user", "grant-role", user, role)
        self.etcd.enable_auth(SECURE_USERS["root"])
        answered = []
        context = ssl.create_default_context(cafile=self.pki["ca"])  # no client certificate
        conn = http.client.HTTPSConnection("127.0.0.1", self.etcd.client_port, timeout=10,
                                           context=context)
        try:
            conn.request("POST", "/v3/kv/range", json.dumps({"key": "AA=="}))
            answered.append("a client without a certificate: HTTP %d" % conn.getresponse().status)
        except (OSError, http.client.HTTPException):
            pass  # refused in the handshake (or, with TLS 1.3, right after it)
        finally:
            conn.close()
        anonymous = etcd_server.EtcdClient(self.etcd.url, tls=self.pki)  # no user
        try:
            anonymous.get_prefix(PREFIX + "/")
            answered.append("a request without a user was answered")
        except EtcdError as e:
            # (through the JSON gateway, etcd may take the request for one of
            # the gateway's certificate's CN, a user that does not exist)
            if "user name is empty" not in e.message and "permission denied" not in e.message:
                answered.append("a request without a user: %s" % e.message)
        finally:
            anonymous.close()
        self.check(not answered, "secure: etcd refuses a client without a certificate of the "
                   "test CA, and a request without a user", "; ".join(answered))
        watcher = self.client("watcher")
        try:
            watcher.get_prefix(PREFIX + "/")
            try:
                watcher.put(MEMBERS + "not-allowed", "1")
                refused = "the put was applied"
            except EtcdError as e:
                refused = None if "permission denied" in e.message else e.message
        finally:
            watcher.close()
        self.check(refused is None, "secure: the watchers' user reads the prefix and may not "
                   "write it", refused)

    def client(self, user):
        """An EtcdClient; with --secure, TLS and the user `user`."""
        if not self.args.secure:
            return self.etcd.client()
        return self.etcd.client(user=(user, SECURE_USERS[user]))

    def etcd_flags(self, user="watcher"):
        """What a `chring watch` or `chring etcd` needs besides --etcd: with
        --secure, etcdctl's TLS flags and the user with its password file."""
        if not self.args.secure:
            return []
        cert, key = self.pki["client"]
        return ["--cacert", self.pki["ca"], "--cert", cert, "--key", key,
                "--user", user, "--password-file", self.password_files[user]]

    def _start_loader(self, kind, argv):
        rep = Reporter(kind, kind)

        def line(t, text):
            m = REPORTED.match(text)
            if m:
                rep.record(t, -1 if m.group(1) == "nil" else int(m.group(1)), m.group(2))
            elif text.startswith("error"):
                rep.error(t, text)

        proc = Proc(kind, argv, os.path.join(self.root, kind + ".log"), line, "stdout",
                    self.env).start()
        self.loaders.append((proc, rep))

    def _start_nginx(self, ring_path):
        sys.path.insert(0, self.args.nginx_tests)
        import harness  # bindings/nginx/tests: nginx instances on loopback
        import test_e2e  # its per-worker keep-alive connections
        self.workspace = harness.Workspace(self.args.nginx)
        inst = self.workspace.nginx("fleet", modules=[os.path.abspath(self.args.nginx_module)],
                                    workers=2, env=self.env)
        port = harness.free_ports(1)[0]
        servers = "\n".join("    server %s;" % i.decode() for i in self.ids if is_server(i))
        inst.start("""
  upstream ring {
    chring $request_uri file=%s check=%s;
%s
  }
  server {
    listen 127.0.0.1:%d reuseport;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    location / {
      add_header X-Worker $pid always;
      return 200 "$chring_fingerprint_ring $chring_revision_ring";
    }
  }""" % (ring_path, NGINX_CHECK, servers, port))
        self.nginx = inst
        conns = test_e2e.WorkerConnections(port, inst.workers)
        for pid in sorted(conns.conns):
            self.nginx_reporters[pid] = Reporter("nginx[%s]" % pid, "nginx")
        self.poller = threading.Thread(target=self._poll_nginx, args=(conns,), daemon=True)
        self.poller.start()

    def _poll_nginx(self, conns, interval=0.02, seconds=600.0):
        deadline = time.monotonic() + seconds
        try:
            for _ in range(int(seconds / interval)):
                if self.polling.is_set() or time.monotonic() > deadline:
                    return
                for pid, rep in self.nginx_reporters.items():
                    try:
                        body, _, _ = conns.get(pid, "/status")
                    except Exception as e:  # reported; the check sees no convergence
                        rep.error(time.monotonic(), "status: %s" % e)
                        return
                    t = time.monotonic()
                    fields = body.split()
                    if len(fields) == 2:
                        rep.record(t, int(fields[1]), fields[0])
                    else:
                        rep.error(t, "status: %r" % body)
                time.sleep(interval)
        finally:
            conns.close()

    def stop(self):
        """Stops everything that was started, whatever state it is in."""
        steps = [lambda: self.polling.set(),
                 lambda: self.poller and self.poller.join(10)]
        steps += [lambda p=p: p.stop() for p, _ in self.loaders]
        steps += [lambda w=w: w.proc and w.proc.stop() for w in self.watchers]
        steps += [lambda: self.workspace and self.workspace.__exit__(None, None, None),
                  lambda: self.kv and self.kv.close(),
                  lambda: self.driver and self.driver.close(),
                  lambda: self.proxy and self.proxy.stop(),
                  lambda: self.etcd.cleanup()]
        for step in steps:
            try:
                step()
            except Exception as e:  # keep stopping the others
                print("warning: stopping the fleet: %s: %s" % (type(e).__name__, e))

    def keep_or_remove(self, failed):
        if failed or os.environ.get("CHRING_ETCD_KEEP"):
            print("fleet files kept in %s" % self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def logs_tail(self, chars=3000):
        out = log_tails(self.root, chars)
        out.append("--- etcd\n%s" % self.etcd.log_text()[-chars:])
        return "\n".join(out)

    # -- what the fleet reports --

    def reporters(self):
        return ([w.reporter for w in self.watchers] + [r for _, r in self.loaders]
                + list(self.nginx_reporters.values()))

    def loader(self, kind):
        return next(r for p, r in self.loaders if r.kind == kind)

    def fingerprints(self, texts):
        """The C library's fingerprint of each ring file text (None: refused)."""
        if not texts:
            return []
        d = tempfile.mkdtemp(dir=self.root, prefix="expected-")
        paths = []
        for i, text in enumerate(texts):
            paths.append(os.path.join(d, "%d.ring" % i))
            with open(paths[-1], "w") as f:
                f.write(text)
        r = subprocess.run([self.args.probe, "fingerprint"] + paths, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        shutil.rmtree(d, ignore_errors=True)
        lines = r.stdout.decode().splitlines()
        if len(lines) != len(texts):
            raise RuntimeError("ringfile_probe: %s" % r.stderr.decode())
        return [l.lower() if l.startswith("0x") else None for l in lines]

    def expected(self):
        """(revision, fingerprint) of etcd's state now, computed offline;
        fingerprint None when the state is not a valid ring."""
        kvs, rev = self.kv.get_prefix(PREFIX + "/")
        text = ring_text(kvs)
        return rev, (self.fingerprints([text])[0] if text is not None else None)

    def wait_all(self, revision, fingerprint, reporters, seconds=WAIT_SECONDS):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if all(r.latest() == (revision, fingerprint) for r in reporters):
                return True
            time.sleep(0.02)
        return False

    def converge(self, what, since, target=TARGET_SECONDS, reporters=None):
        """The check: every reporter reports etcd's state (revision and the
        offline fingerprint) within the bounded wait. How long each took
        from `since` (the last change) is recorded with whether the slowest
        met `target` (None: no target, a catch-up after a fault), and
        printed; a time is never a failure. The watchers' files too.
        Returns {reporter name: seconds from `since`}."""
        rev, fp = self.expected()
        self.check(fp is not None, "%s: etcd's state at revision %d is a valid ring" % (what, rev))
        reps = reporters or self.reporters()
        self.wait_all(rev, fp, reps)
        lags = {}
        for r in reps:
            t = r.reporting_since(rev, fp)
            lags[r.name] = None if t is None else max(0.0, t - since)
        never = sorted(n for n, l in lags.items() if l is None)
        slowest = max(lags, key=lambda n: float("inf") if lags[n] is None else lags[n])
        met = None if target is None or never else lags[slowest] <= target
        self.convergences.append({"check": what, "revision": rev, "slowest": slowest,
                                  "seconds": lags[slowest], "target": target, "met_target": met})
        self.check(not never, "%s: all %d processes report revision %d, fingerprint %s within "
                   "%.0f s (slowest: %s, %s%s)" % (
                       what, len(reps), rev, fp, WAIT_SECONDS, slowest, fmt_seconds(lags[slowest]),
                       "" if met is None else ", %s the %.0f s target" % (
                           "within" if met else "past", target)),
                   "never: " + ", ".join("%s (now %s)" % (
                       n, next(r.latest() for r in reps if r.name == n)) for n in never))
        files = {w.name: w.state() for w in self.watchers
                 if w.reporter in reps}
        self.check(all(s == (rev, fp) for s in files.values()),
                   "%s: the watchers' files say revision %d, fingerprint %s" % (what, rev, fp),
                   repr(files))
        shown = self.show()
        self.check(shown == (rev, fp), "%s: `chring etcd show` says revision %d, fingerprint %s"
                   % (what, rev, fp), repr(shown))
        return lags

    def show(self):
        """(revision, fingerprint) that `chring etcd show --format json` reports."""
        r = subprocess.run([self.args.chring, "etcd", "--etcd", self.etcd.url, "--prefix", PREFIX]
                           + self.etcd_flags("watcher") + ["show", "--format", "json"],
                           stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60, env=self.env)
        if r.returncode != 0:
            return "exit %d: %s" % (r.returncode, r.stderr.decode(errors="replace").strip())
        try:
            ring = json.loads(r.stdout)
            return int(ring["revision"]), ring["fingerprint"].lower()
        except (ValueError, KeyError, TypeError) as e:
            return "unreadable output (%s): %r" % (e, r.stdout[:200])

    def verify_published(self, what, since, until, sample=600):
        """Every (revision, fingerprint) reported in [since, until] is the
        fingerprint of etcd's state at that revision (up to `sample`
        revisions, chosen at random, read back from etcd's history)."""
        claims = {}
        for r in self.reporters():
            for _, rev, fp in r.entries(since, until):
                claims.setdefault(rev, set()).add((r.name, fp))
        nonsense = {rev: claims.pop(rev) for rev in list(claims) if rev < 1}
        self.check(not nonsense, "%s: every report has a revision" % what, repr(nonsense))
        revs = sorted(claims)
        if len(revs) > sample:
            revs = sorted(random.Random(len(revs)).sample(revs, sample))
        texts = [ring_text(self.kv.get_prefix(PREFIX + "/", revision=rev)[0]) for rev in revs]
        fps = self.fingerprints([t or "" for t in texts])
        wrong = ["revision %d: etcd's state is %s, %s" % (rev, fp, sorted(claims[rev]))
                 for rev, fp in zip(revs, fps) if any(f != fp for _, f in claims[rev])]
        self.check(revs and not wrong,
                   "%s: each of %d revisions reported is the fingerprint of etcd's state at "
                   "that revision (%d reports checked)" % (
                       what, len(revs), sum(len(claims[r]) for r in revs)),
                   "\n    ".join(wrong[:10]))

    def no_errors(self, what, since, reporters):
        errors = {r.name: r.errors_since(since) for r in reporters}
        self.check(not any(errors.values()), "%s: no load errors" % what,
                   repr({n: e[:3] for n, e in errors.items() if e}))

    def alive(self, what):
        dead = [w.name for w in self.watchers if not w.proc.alive()]
        dead += [p.name for p, _ in self.loaders if not p.alive()]
        if self.nginx is not None and self.nginx.process.poll() is not None:
            dead.append("nginx")
        self.check(not dead, "%s: every process still runs" % what, repr(dead))


def fmt_seconds(s):
    return "never" if s is None else "%.3f s" % s


# -- the driver --------------------------------------------------------------------


def is_server(member):
    return member.startswith(b"10.")


DRIVEN = 46  # the ids the drivers change: the first ones of ids_pool()


def ids_pool(bulk=0):
    """40 ids that are nginx `server` addresses, 6 that need escapes (nginx
    reports them as matching no server): the DRIVEN ids; then `bulk` more
    servers, members that no driver changes."""
    ids = [b"10.0.%d.%d:80" % (i // 8, i % 8 + 1) for i in range(40)]
    ids += ["cache a".encode(), "café-ü".encode(), b"100%", b"#hash", b"slash/id",
            b"tab\tid"]
    ids += [b"10.9.%d.%d:80" % (i // 200, i % 200 + 1) for i in range(bulk)]
    return ids


ZONES = [b"", b"", b"z1", b"z2", "eu west ü".encode()]


class Driver:
    """Random membership changes, each one etcd transaction, on its own
    connection `kv` (an EtcdClient, or anything with its op_put, op_delete,
    txn, get_prefix, close and `errors`, the exceptions of a failed call);
    a model of the members it believes are in etcd (re-read from etcd after
    a failed call, which may or may not have applied)."""

    def __init__(self, kv, ids, rng, low=5, high=40):
        self.kv, self.ids, self.rng = kv, ids, rng
        self.low, self.high = low, high
        self.model = {}
        self.changes = []  # (time sent, revision, kind)
        self.failures = 0
        self.stale = False  # a call failed: re-read the model before the next change

    def close(self):
        self.kv.close()

    @staticmethod
    def key(member):
        return MEMBERS + escape(member)

    def resync(self):
        kvs, _ = self.kv.get_prefix(MEMBERS)
        self.model = {}
        for key, value in kvs.items():
            try:
                member = unescape(key[len(MEMBERS):])
                fields = value.decode().split()
                if member in self.ids:
                    self.model[member] = (int(fields[0]), unescape(fields[1].encode())
                                          if len(fields) > 1 else b"")
            except (ValueError, IndexError, UnicodeDecodeError):
                pass

    def _op(self, member, model, action=None):
        kv = self.kv
        if action is None:
            if member not in model:
                action = "add"
            else:
                action = self.rng.choice(["remove", "reweight"])
        if action == "remove":
            del model[member]
            return kv.op_delete(self.key(member))
        weight = self.rng.randint(0, 5) if action == "reweight" else self.rng.randint(1, 5)
        zone = model[member][1] if member in model else self.rng.choice(ZONES)
        model[member] = (weight, zone)
        return kv.op_put(self.key(member), member_value(weight, zone))

    def plan(self):
        """(kind, ops, model after) of one random change."""
        model = dict(self.model)
        present = sorted(model)
        absent = [i for i in self.ids if i not in model]
        r = self.rng.random()
        if (r < 0.3 or len(model) <= self.low) and absent and len(model) < self.high:
            kind, ops = "add", [self._op(self.rng.choice(absent), model, "add")]
        elif r < 0.55 and present and len(model) > self.low:
            kind, ops = "remove", [self._op(self.rng.choice(present), model, "remove")]
        elif r < 0.85 and present:
            kind, ops = "reweight", [self._op(self.rng.choice(present), model, "reweight")]
        else:
            kind = "batch"
            ops = [self._op(m, model) for m in self.rng.sample(self.ids, min(10, len(self.ids)))]
        return kind, ops, model

    def change(self):
        """One random change; its revision. Raises RuntimeError on a failed
        call (which may or may not have been applied)."""
        try:
            if self.stale:
                self.resync()
                self.stale = False
            kind, ops, model = self.plan()
            t = time.monotonic()
            _, rev = self.kv.txn(ops)
        except self.kv.errors as e:
            self.failures += 1
            self.stale = True
            self.kv.reset()
            raise RuntimeError("change failed: %s" % e)
        self.model = model
        self.changes.append((t, rev, kind))
        return rev

    def run(self, count, mean_interval=0.0, seconds=120.0, stop=None):
        """`count` changes (retrying failed ones), Poisson-spaced with
        `mean_interval`, for at most `seconds`; the number made."""
        deadline = time.monotonic() + seconds
        made = 0
        for _ in range(count * 10):  # failed attempts included
            if made >= count or time.monotonic() > deadline or (stop and stop.is_set()):
                break
            try:
                self.change()
                made += 1
            except RuntimeError:
                time.sleep(0.05)
                continue
            if mean_interval:
                time.sleep(min(10 * mean_interval, self.rng.expovariate(1.0 / mean_interval)))
        return made

    def seed(self, count):
        """Adds `count` members, one transaction each, fast."""
        for member in self.rng.sample(self.ids, count):
            self.model[member] = (1, b"")
            self.kv.put(self.key(member), member_value(1, b""))

    def last_time(self):
        return self.changes[-1][0]


class Background:
    """A function in a thread; join() re-raises what it raised."""

    def __init__(self, fn, *args, **kwargs):
        self.result, self.exc = None, None
        self.thread = threading.Thread(target=self._run, args=(fn, args, kwargs), daemon=True)
        self.thread.start()

    def _run(self, fn, args, kwargs):
        try:
            self.result = fn(*args, **kwargs)
        except BaseException as e:  # handed to join()
            self.exc = e

    def join(self, timeout=300):
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise RuntimeError("background work did not end within %d s" % timeout)
        if self.exc:
            raise self.exc
        return self.result


# -- lag statistics ------------------------------------------------------------------------


def lags_of(fleet, changes, since):
    """Per kind of reporter: the seconds from each change (sent) to each
    reporter of that kind first reporting its revision or a later one;
    'fleet': to the last reporter of all. For a time in which revisions
    only go up; reports before `since` are not looked at."""
    per_kind = {}
    fleet_lags = [0.0] * len(changes)
    missing = 0
    for r in fleet.reporters():
        entries = r.entries(since)
        revs = [e[1] for e in entries]
        for i, (t, rev, _) in enumerate(changes):
            j = bisect.bisect_left(revs, rev)
            if j == len(entries):
                missing += 1
                fleet_lags[i] = float("inf")
                continue
            lag = max(0.0, entries[j][0] - t)
            per_kind.setdefault(r.kind, []).append(lag)
            fleet_lags[i] = max(fleet_lags[i], lag)
    per_kind["fleet"] = fleet_lags
    return per_kind, missing


def report_lags(name, per_kind, results):
    out = {}
    for kind in ["watcher", "go", "lua", "nginx", "fleet"]:
        values = per_kind.get(kind, [])
        if not values:
            continue
        p50, p99 = percentile(values, 50), percentile(values, 99)
        out[kind] = {"n": len(values), "p50_ms": round(p50 * 1000, 1),
                     "p99_ms": round(p99 * 1000, 1), "max_ms": round(max(values) * 1000, 1)}
        print("lag %s %-7s p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  (n=%d)"
              % (name, kind, p50 * 1000, p99 * 1000, max(values) * 1000, len(values)))
    results["lags_" + name] = out


# -- cases ---------------------------------------------------------------------------


def settle(fleet, what):
    """The start: the fleet reports etcd's state."""
    fleet.converge("%s: at start" % what, fleet.t_start, target=None)


def after_fault(fleet, name, since, results, count=20):
    """The fleet first catches up (bounded, the time reported), then 20 more
    changes and the check."""
    lags = fleet.converge("%s: the fleet catches up" % name, since, target=None)
    slowest = max((l for l in lags.values() if l is not None), default=None)
    results["recovery_seconds_" + name] = slowest
    print("recovery %s: %s from the end of the fault to the whole fleet" % (name,
                                                                             fmt_seconds(slowest)))
    made = fleet.driver.run(count, mean_interval=0.02)
    fleet.check(made == count, "%s: %d changes after the fault" % (name, count))
    return fleet.converge("%s: then %d changes" % (name, count), fleet.driver.last_time())


def case_stream(fleet, results):
    settle(fleet, "stream")
    start = time.monotonic()
    n0 = len(fleet.driver.changes)
    made = fleet.driver.run(1000, mean_interval=0.015, seconds=180)
    fleet.check(made == 1000, "1000 changes as transactions (%d failed calls)"
                % fleet.driver.failures)
    changes = fleet.driver.changes[n0:]
    kinds = {k: sum(1 for c in changes if c[2] == k) for k in ("add", "remove", "reweight",
                                                                "batch")}
    print("changes: %s in %.1f s" % (kinds, changes[-1][0] - changes[0][0]))
    fleet.check(all(kinds.values()), "every kind of change was made: %s" % kinds)
    lags = fleet.converge("after 1000 changes", fleet.driver.last_time())
    results["final_lags"] = lags
    per_kind, missing = lags_of(fleet, changes, start)
    fleet.check(missing == 0, "every reporter reported each change's revision or a later one")
    report_lags("stream", per_kind, results)
    fleet.verify_published("stream", start, time.monotonic())
    fleet.no_errors("stream", start, fleet.reporters())


def case_kill_etcd(fleet, results):
    settle(fleet, "kill-etcd")
    start = time.monotonic()
    n0 = len(fleet.driver.changes)
    work = Background(fleet.driver.run, 300, mean_interval=0.01, seconds=120)
    deadline = time.monotonic() + 60
    while len(fleet.driver.changes) < n0 + 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    t_kill = time.monotonic()
    fleet.etcd.kill()
    time.sleep(1.0)
    fleet.etcd.start()
    print("etcd killed after %d changes, back after %.1f s"
          % (len(fleet.driver.changes) - n0, time.monotonic() - t_kill))
    made = work.join()
    fleet.check(made == 300, "300 changes across the kill (%d failed calls, retried)"
                % fleet.driver.failures)
    fleet.check(fleet.driver.failures > 0, "some calls failed while etcd was down")
    fleet.converge("after SIGKILL and restart of etcd", fleet.driver.last_time())
    per_kind, missing = lags_of(fleet, fleet.driver.changes[n0:], start)
    fleet.check(missing == 0, "every reporter reported each change's revision or a later one")
    report_lags("kill-etcd", per_kind, results)
    for w in fleet.watchers:
        relists = w.lines_since(t_kill, RELISTING)
        fleet.check(relists, "%s logged a re-list after the kill" % w.name,
                    "nothing since the kill matches %r" % RELISTING.pattern)
    fleet.verify_published("kill-etcd", start, time.monotonic())
    fleet.alive("kill-etcd")


def case_compact(fleet, results):
    settle(fleet, "compact")
    stopped = fleet.watchers[1:]
    before = {w.name: w.reporter.latest() for w in stopped}
    for w in stopped:
        w.proc.signal(signal.SIGSTOP)
    made = fleet.driver.run(50, mean_interval=0.01)
    fleet.check(made == 50, "50 changes while watcher1 and watcher2 are stopped")
    rev = fleet.etcd.compact()
    fleet.check(rev >= fleet.driver.changes[-1][1], "etcd compacted at revision %d, past them"
                % rev)
    try:
        fleet.kv.get_prefix(PREFIX + "/", revision=fleet.driver.changes[-50][1])
        compacted = False
    except EtcdError as e:
        compacted = "compacted" in e.message
    fleet.check(compacted, "the 50 changes' revisions are gone from etcd's history")
    fleet.proxy.cut("drop")  # watcher2's connections break while it is stopped
    fleet.proxy.restore()
    fleet.check(all(w.reporter.latest() == before[w.name] for w in stopped),
                "stopped watchers published nothing meanwhile")
    t_cont = time.monotonic()
    for w in stopped:
        w.proc.signal(signal.SIGCONT)
    after_fault(fleet, "compact", t_cont, results)
    relists = fleet.watchers[2].lines_since(t_cont, RELISTING)
    fleet.check(relists, "watcher2 (its watch resumed past a compaction) logged a re-list",
                "nothing since SIGCONT matches %r" % RELISTING.pattern)
    fleet.alive("compact")


def case_restore(fleet, results):
    settle(fleet, "restore")
    snapshot = os.path.join(fleet.root, "snapshot.db")
    old_rev, old_fp = fleet.expected()
    fleet.etcd.snapshot_save(snapshot)
    made = fleet.driver.run(100, mean_interval=0.01)
    fleet.check(made == 100, "100 changes after the snapshot")
    fleet.converge("100 changes after the snapshot", fleet.driver.last_time())
    high_rev = fleet.driver.changes[-1][1]
    fleet.driver.close()
    t_restore = time.monotonic()
    fleet.etcd.snapshot_restore(snapshot)
    # New clients, as an operator's after a restore: with authentication, a
    # token from before it names a raft index the restored etcd has not
    # reached, and etcd holds a request that carries it.
    fleet.kv.close()
    fleet.kv = fleet.client("admin")
    fleet.driver.kv = fleet.client("admin")
    rev, fp = fleet.expected()
    fleet.check((rev, fp) == (old_rev, old_fp) and rev < high_rev,
                "etcd restored: revision %d (was %d), the snapshot's state %s"
                % (rev, high_rev, fp))
    fleet.driver.resync()
    fleet.converge("after the restore, back to revision %d" % rev, t_restore, target=None)
    for w in fleet.watchers:
        fleet.check(w.lines_since(t_restore, RELISTING),
                    "%s logged a re-list after the restore" % w.name)
        if fleet.args.secure:
            # its token, from before the restore, names a raft index the
            # restored etcd has not reached: no answer, then a new token
            fleet.check(w.lines_since(t_restore, REAUTHENTICATING),
                        "%s authenticated again after its request with the old token got no "
                        "answer" % w.name,
                        "nothing since the restore matches %r" % REAUTHENTICATING.pattern)
    after_fault(fleet, "restore", t_restore, results)
    fleet.check(fleet.driver.changes[-1][1] <= high_rev,
                "the changes after the restore reused revision numbers (last %d <= %d)"
                % (fleet.driver.changes[-1][1], high_rev))
    fleet.alive("restore")


def case_cut(fleet, results, seconds=30.0):
    settle(fleet, "cut")
    cut_off_reps = [fleet.watchers[2].reporter] + list(fleet.nginx_reporters.values())
    others = [r for r in fleet.reporters() if r not in cut_off_reps]
    before = {r.name: r.latest() for r in cut_off_reps}
    t_cut = time.monotonic()
    fleet.proxy.cut("stall")
    made = fleet.driver.run(100, mean_interval=0.02)
    fleet.check(made == 100, "100 changes during the cut")
    fleet.converge("during the cut, the processes on watcher0 and watcher1",
                   fleet.driver.last_time(), reporters=others)
    time.sleep(max(0.0, t_cut + seconds - time.monotonic()))
    fleet.check(all(r.latest() == before[r.name] for r in cut_off_reps),
                "after %.0f s of cut, watcher2 and nginx still report the ring before it"
                % seconds, repr({r.name: r.latest() for r in cut_off_reps}))
    state = fleet.watchers[2].state()
    fleet.check(state == before[fleet.watchers[2].name], "and watcher2's file still holds it")
    t_restore = time.monotonic()
    fleet.proxy.restore()
    relists = fleet.watchers[2].lines_since(t_cut, RELISTING)
    fleet.check(relists, "watcher2 found the dead connection and logged a re-list",
                "nothing since the cut matches %r" % RELISTING.pattern)
    after_fault(fleet, "cut", t_restore, results)
    fleet.alive("cut")


def etcdctl_put(fleet, key, value):
    """A put by hand (no validation): its revision."""
    code, out, err = fleet.etcd.etcdctl("-w", "json", "put", key, value)
    if code != 0:
        raise RuntimeError("etcdctl put %s: %s" % (key, err))
    return int(json.loads(out)["header"]["revision"])


def etcdctl_del(fleet, key):
    code, out, err = fleet.etcd.etcdctl("-w", "json", "del", key)
    if code != 0:
        raise RuntimeError("etcdctl del %s: %s" % (key, err))
    return int(json.loads(out)["header"]["revision"])


def case_malformed(fleet, results):
    settle(fleet, "malformed")
    # (what, puts that make the state invalid, then the repair)
    bad = [
        ("a weight that is not a number", [(MEMBERS + "bad-weight", "12x")],
         [("put", MEMBERS + "bad-weight", "3")]),
        ("a weight over the limit", [(MEMBERS + "heavy", "1000001")],
         [("put", MEMBERS + "heavy", "7")]),
        ("an id with a bad escape", [(MEMBERS + "bad%zz", "1")],
         [("del", MEMBERS + "bad%zz", None)]),
        ("a duplicate id (two spellings)", [(MEMBERS + "d%75p", "2")],
         [("del", MEMBERS + "d%75p", None)]),
        ("an unknown option directive", [(OPTIONS, "%%frobnicate 1")],
         [("del", OPTIONS, None)]),
    ]
    etcdctl_put(fleet, MEMBERS + "dup", "1")
    fleet.converge("a member 'dup'", time.monotonic() - 1.0, target=None)
    for what, puts, repair in bad:
        good = fleet.expected()
        t0 = time.monotonic()
        revs = [etcdctl_put(fleet, k, v) for k, v in puts]
        # a valid change meanwhile: the state stays invalid, refused again
        fleet.driver.change()
        revs.append(fleet.driver.changes[-1][1])
        rev, fp = fleet.expected()
        fleet.check(fp is None, "%s: etcd's state at revision %d is not a valid ring" % (what, rev))
        for w in fleet.watchers:
            deadline = time.monotonic() + WAIT_SECONDS
            while time.monotonic() < deadline and not any(
                    ("revision %d" % revs[-1]) in l for _, l in w.lines_since(t0, REFUSED)):
                time.sleep(0.02)
            refused = w.lines_since(t0, REFUSED)
            fleet.check(any(("revision %d" % revs[-1]) in l for _, l in refused),
                        "%s: %s logged 'refused revision %d: ...'" % (what, w.name, revs[-1]),
                        repr(refused))
            # The bad put and the valid change after it can reach a watcher
            # in one batch (one refusal, of the later revision): either
            # refusal names the key at fault.
            fleet.check(any(puts[0][0] in l and any(("refused revision %d:" % r) in l for r in revs)
                            for _, l in refused),
                        "%s: %s named the key at fault for revision %d (or the later one of its batch)"
                        % (what, w.name, revs[0]), repr(refused))
        time.sleep(0.5)  # the loaders and nginx look at the files every 20-50 ms
        kept = {r.name: r.latest() for r in fleet.reporters()}
        fleet.check(all(v == good for v in kept.values()) and all(
            w.state() == good for w in fleet.watchers),
            "%s: every process keeps revision %d, fingerprint %s" % ((what,) + good),
            repr(kept))
        moved = [r.name for r in fleet.reporters() if r.entries(t0)]
        fleet.check(not moved, "%s: and reported nothing else meanwhile" % what, repr(moved))
        t_repair = time.monotonic()
        for action, key, value in repair:
            if action == "put":
                etcdctl_put(fleet, key, value)
            else:
                etcdctl_del(fleet, key)
        fleet.converge("%s: repaired with etcdctl" % what, t_repair)
    fleet.no_errors("malformed", 0.0, [r for _, r in fleet.loaders]
                    + list(fleet.nginx_reporters.values()))
    fleet.alive("malformed")


def case_kill_watcher(fleet, results, kills=8):
    kv = fleet.kv
    for i in range(0, len(fleet.bulk), 100):
        kv.txn([kv.op_put(Driver.key(m), member_value(1, b"")) for m in fleet.bulk[i:i + 100]])
    settle(fleet, "kill-watcher")
    w = fleet.watchers[0]
    start = time.monotonic()
    bad_copy = os.path.join(fleet.root, "first-bad.ring")
    reader = subprocess.Popen([fleet.args.probe, "read-loop", w.out, "120", "100000000",
                               bad_copy], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=fleet.env)
    try:
        stop = threading.Event()
        work = Background(fleet.driver.run, 100000, mean_interval=0.0, seconds=60, stop=stop)
        rng = random.Random(6)
        published = []
        for _ in range(kills):
            time.sleep(rng.uniform(0.2, 0.6))
            published.append(len(w.reporter.entries(start)))
            w.proc.kill()
            w.start()
        time.sleep(0.5)
        stop.set()
        made = work.join()
    finally:
        out, _ = reader.communicate(timeout=30)
    print("reader: %s" % out.decode().strip())
    m = re.search(r"reads (\d+) ok (\d+) bad (\d+) missing (\d+) revisions (\d+)", out.decode())
    fleet.check(m is not None, "the reader ran")
    if m:
        reads, ok, bad, missing, revisions = map(int, m.groups())
        fleet.check(bad == 0 and missing == 0 and reads > 1000 and revisions >= 2,
                    "%d reads of watcher0's file, %d revisions seen: every read a complete "
                    "ring file (%d partial, %d missing)" % (reads, revisions, bad, missing),
                    out.decode())
    fleet.check(made > 100, "%d changes during %d kills of watcher0 (it had published %s "
                "times before each)" % (made, kills, published))
    leftovers = [n for n in os.listdir(w.dir) if n != "ring.txt"]
    print("files beside watcher0's ring file after the kills: %s" % leftovers)
    go = fleet.loader("go")
    fleet.no_errors("the Go loader on watcher0's file", start, [go])
    fleet.converge("after the kills", fleet.driver.last_time())
    fleet.verify_published("kill-watcher", start, time.monotonic())
    fleet.alive("kill-watcher")


def etcd3_python():
    """An interpreter that has python3-etcd3 (for burst_driver.py), or None."""
    for candidate in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        try:
            r = subprocess.run([candidate, "-c", "import etcd3, grpc"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0:
            return candidate
    return None


def case_burst(fleet, results, total=10000, clients=8, seconds=10.0):
    settle(fleet, "burst")
    baseline = {w.name: w.proc.rss_kib() for w in fleet.watchers}
    samples = {w.name: [] for w in fleet.watchers}
    sampling = threading.Event()

    def sample():
        for _ in range(int(300 / 0.1)):
            if sampling.is_set():
                return
            for w in fleet.watchers:
                rss = w.proc.rss_kib()
                if rss is not None:
                    samples[w.name].append((time.monotonic(), rss))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    try:
        r = subprocess.run([fleet.args.etcd3_python, os.path.join(HERE, "burst_driver.py"),
                            "--endpoint", "127.0.0.1:%d" % fleet.etcd.client_port,
                            "--total", str(total), "--clients", str(clients),
                            "--seconds", str(seconds)] + fleet.etcd_flags("admin"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180,
                           env=dict(os.environ, PYTHONPATH=HERE))
        if r.returncode not in (0, 1):
            raise RuntimeError("burst_driver.py: exit %d: %s" % (r.returncode,
                                                                  r.stderr.decode()[-2000:]))
        out = json.loads(r.stdout)
        changes = [tuple(c) for c in out["changes"]]
        t_end = changes[-1][0]
        last_rev = max(c[1] for c in changes)
        print("burst: %d changes in %.1f s (%d failed calls)" % (
            len(changes), t_end - changes[0][0], out["failures"]))
        fleet.check(len(changes) == total, "%d changes from %d clients, one transaction each"
                    % (total, clients))
        results["burst_seconds"] = round(t_end - changes[0][0], 2)
        fleet.converge("after the burst", t_end)
        per_kind, missing = lags_of(fleet, changes, t0)
        fleet.check(missing == 0, "every reporter reported each change's revision or a later one")
        report_lags("burst", per_kind, results)
        rev, _ = fleet.expected()
        fleet.check(rev == last_rev, "the fleet converged to the burst's last revision %d"
                    % last_rev)
        time.sleep(0.5)
    finally:
        sampling.set()
        sampler.join(10)
    # Bounded memory: the membership never has more than 46 members, so a
    # watcher's working set does not grow with the number of events. A
    # watcher that kept the events (or the rings) it has processed would
    # grow by at least ~100 bytes per event, ~1 MB over the burst; the
    # second half of the burst must not add more than 4 MiB to the peak of
    # the first half, and the peak stays within 64 MiB of the start.
    mid = t0 + (t_end - t0) / 2
    memory = {}
    for name, s in samples.items():
        first = max((r for t, r in s if t <= mid), default=0)
        second = max((r for t, r in s if t > mid), default=0)
        memory[name] = {"start_kib": baseline[name], "peak_first_half_kib": first,
                        "peak_second_half_kib": second, "samples": len(s)}
        print("rss %s: start %s KiB, peak first half %d KiB, second half %d KiB (%d samples)"
              % (name, baseline[name], first, second, len(s)))
        fleet.check(len(s) > 50 and second <= first + 4096
                    and max(first, second) <= (baseline[name] or 0) + 65536,
                    "%s's memory stays bounded during the burst" % name, repr(memory[name]))
    results["memory"] = memory
    fleet.alive("burst")


CASES = {
    "stream": (case_stream, 0),
    "kill-etcd": (case_kill_etcd, 0),
    "compact": (case_compact, 0),
    "restore": (case_restore, 0),
    "cut": (case_cut, 0),
    "malformed": (case_malformed, 0),
    "kill-watcher": (case_kill_watcher, 600),
    "burst": (case_burst, 0),
}


# -- main ------------------------------------------------------------------------------------


def missing_tools(args):
    """Why the fleet cannot run here, or None."""
    why = etcd_server.available()
    if why:
        return why
    if not args.chring:
        return "the chring CLI is not built"
    for sub in (["watch", "--help"], ["etcd", "--help"]):
        try:
            r = subprocess.run([args.chring] + sub, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=30)
        except OSError as e:
            return "chring: %s" % e
        if r.returncode != 0:
            return "chring has no '%s' command" % sub[0]
    if not args.go_loader:
        return "go not found (no Go loader)"
    if not args.luajit:
        return "luajit not found"
    if not args.nginx or not args.nginx_module:
        return "nginx or the chring module not built"
    return None


def absolute_paths(args, names):
    """The arguments `names` that are paths (hold a separator) made absolute:
    meson gives paths relative to the build dir."""
    for name in names:
        value = getattr(args, name)
        if value and os.sep in value:
            setattr(args, name, os.path.abspath(value))


class Checks:
    """A run's checks: one line each, counted in passed and failed."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print("ok: " + what, flush=True)
        else:
            self.failed += 1
            print("FAIL: " + what + ("\n    " + detail if detail else ""), flush=True)
        return ok


def fleet_parser(description):
    """The arguments of the fleet tests with nginx (test_acks.py,
    test_availability.py); parse with fleet_arguments()."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--chring", default="")
    p.add_argument("--nginx", default="")
    p.add_argument("--nginx-module", default="")
    p.add_argument("--nginx-tests", required=True)
    p.add_argument("--results-dir", default="")
    return p


def fleet_arguments(parser):
    args = parser.parse_args()
    absolute_paths(args, ("chring", "nginx", "nginx_module"))
    return args


def fleet_missing(args, commands, programs):
    """Why a fleet test with nginx cannot run, or None: etcd, the CLI with
    each command of `commands` (argument lists, each answering --help),
    nginx and its module, the programs of `programs` ({name: what for})."""
    why = etcd_server.available()
    if why:
        return why
    if not args.chring:
        return "the chring CLI is not built"
    for command in commands:
        r = subprocess.run([args.chring] + command + ["--help"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30)
        if r.returncode != 0:
            return "chring has no '%s' command" % " ".join(command)
    if not args.nginx or not args.nginx_module:
        return "nginx or the chring module not built"
    for program, what in sorted(programs.items()):
        if shutil.which(program) is None:
            return "%s not found (%s)" % (program, what)
    return None


def run_fleet(why, make_test):
    """Unless `why` (a reason to skip, printed): the test make_test() makes,
    run to its end, and the seconds it took; else (None, None)."""
    if why:
        print("skipped: %s" % why)
        return None, None
    test = make_test()
    t0 = time.monotonic()
    run_to_end(test)
    return test, round(time.monotonic() - t0, 1)


def run_to_end(test):
    """test.run() with the fleet stopped whatever happens (test.stop());
    an exception is a failed check with the fleet's logs (test.logs_tail())."""
    raise_on_signals()
    try:
        test.run()
    except Exception as e:
        import traceback
        traceback.print_exc()
        test.check(False, "the run went to its end", "%s: %s\n%s" % (type(e).__name__, e, test.logs_tail()))
    finally:
        test.stop()


def finish(test, case, results, results_dir):
    """The end of a run: `results` in RESULTS-<case>.json in results_dir
    (if given), the test's files (test.root) kept when it failed or
    CHRING_ETCD_KEEP is set, the counts printed; the exit status."""
    if results_dir:
        with open(os.path.join(results_dir, "RESULTS-%s.json" % case), "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    if test.failed or os.environ.get("CHRING_ETCD_KEEP"):
        print("files kept in %s" % test.root)
    else:
        shutil.rmtree(test.root, ignore_errors=True)
    print("case %s: %.1f s" % (case, results["seconds"]))
    print("%d passed, %d failed" % (test.passed, test.failed))
    return 1 if test.failed else 0


def raise_on_signals():
    """SIGTERM (meson's timeout) or SIGINT (^C) raises RuntimeError, so that
    the run's `finally` stops the fleet, whose processes run in process
    groups of their own, before going."""
    def terminated(signum, frame):
        raise RuntimeError("stopped by signal %d" % signum)

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGINT, terminated)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--chring", default="")
    parser.add_argument("--probe", required=True, help="tests/etcd/ringfile_probe")
    parser.add_argument("--libchring", required=True)
    parser.add_argument("--go-loader", default="")
    parser.add_argument("--luajit", default="")
    parser.add_argument("--lua-loader", required=True)
    parser.add_argument("--lua-path", required=True, help="bindings/lua/lib")
    parser.add_argument("--nginx", default="")
    parser.add_argument("--nginx-module", default="")
    parser.add_argument("--nginx-tests", required=True, help="bindings/nginx/tests")
    parser.add_argument("--results-dir", default="")
    parser.add_argument("--secure", action="store_true",
                        help="etcd with TLS (--client-cert-auth) and authentication; every "
                        "client with a certificate and a least-privilege user")
    args = parser.parse_args()
    absolute_paths(args, ("chring", "probe", "libchring", "go_loader", "luajit", "lua_loader", "nginx",
                          "nginx_module"))

    why = missing_tools(args)
    if not why and args.secure and shutil.which("openssl") is None:
        why = "openssl not found (the test certificates of --secure)"
    args.etcd3_python = etcd3_python() if args.case == "burst" else None
    if not why and args.case == "burst" and not args.etcd3_python:
        why = "python3-etcd3 not found (the burst's driver)"
    if why:
        print("skipped: %s" % why)
        return SKIP

    raise_on_signals()
    sys.path.insert(0, args.nginx_tests)
    import test_e2e  # its Check: one line per check, failures with details
    check = test_e2e.Check()
    case, bulk = CASES[args.case]
    name = args.case + ("-tls" if args.secure else "")
    results = {"case": args.case, "secure": args.secure}
    fleet = Fleet(args, check, bulk=bulk)
    t0 = time.monotonic()
    try:
        fleet.start()
        case(fleet, results)
        bad = fleet.nginx.bad_log_lines() if fleet.nginx else []
        check(not bad, "no crash, [alert] or [crit] in nginx's log", "\n".join(bad))
    except Exception as e:
        import traceback
        traceback.print_exc()
        check(False, "case %s ran to the end" % name, "%s: %s\n%s" % (
            type(e).__name__, e, fleet.logs_tail()))
    finally:
        fleet.stop()
        fleet.keep_or_remove(check.failed)
    results["checks"] = fleet.convergences
    results["seconds"] = round(time.monotonic() - t0, 1)
    results["passed"], results["failed"] = check.passed, check.failed
    if args.results_dir:
        with open(os.path.join(args.results_dir, "RESULTS-%s.json" % name), "w") as f:
            json.dump(results, f, indent=1, sort_keys=True, default=str)
    print("case %s: %.1f s" % (name, results["seconds"]))
    print("%d passed, %d failed" % (check.passed, check.failed))
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
