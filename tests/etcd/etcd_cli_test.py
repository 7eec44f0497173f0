#!/usr/bin/env python3
"""chring watch and chring etcd against a real etcd (suite 'etcd').

    etcd_cli_test.py --chring PATH CASE

Each case starts its own etcd on loopback (random ports, temporary data
directory; etcd_server.py) and stops it. CASE is one of:
  admin     add, remove, set-weight, apply, show; every refusal (a bad id,
            weight, zone, file, an op the resulting ring refuses) leaves
            etcd's revision unchanged
  conflict  a write that lands between the command's read and its
            transaction (injected by an HTTP proxy in front of etcd) makes
            the command fail with "conflict" and write nothing
  once      chring watch --once: the file equals `chring etcd show
            --format ring-file`; an invalid state writes no file (exit 1);
            an unreachable etcd is exit 1 within the timeout
  follow    a running watcher follows changes made by chring etcd and by
            etcdctl, keeps the last good file over a malformed value and
            recovers on the next valid one, runs --exec with the revision and
            fingerprint, leaves no temporary file, exits 0 on SIGTERM
  catchup   a watcher stopped while ~12 MB of changes are made and compacted
            away catches up to the last revision once continued
  tls       etcd with mutual TLS (--client-cert-auth) and authentication,
            certificates made by openssl: a watcher with a read-only role on
            the prefix follows what an admin user (a read-write role)
            changes; each wrong setting fails with a message naming it: no
            client certificate, the wrong CA, a client certificate of
            another CA, a key not the certificate's, a certificate with a
            Common Name, a wrong password, no user, a role outside the
            prefix, a write with the read-only role, NAME:PASSWORD
  token     etcd's simple tokens expire after 1 s (--auth-token-ttl 1); a
            watcher whose token expires while its --exec runs creates its
            watch again with a new token from the next revision (no
            re-list, nothing missed) and renews the token of its probe;
            after etcd restarts the watcher follows on
  hook-timeout
            a --exec hook that hangs (and has started a child) is killed
            after --hook-timeout with its whole process group, the log says
            so in one line, and the next revision is published and its hook
            run; a hook that exits 0 and leaves a process behind on purpose
            keeps it
  hook-stop SIGTERM to a watcher while its hook runs ends the hook's whole
            group (also one that ignores SIGTERM) and the watcher exits 0
  bounded   a 2 MiB member id, a 2 MiB value, a 2 MiB key outside the
            layout: every log line of the watcher and every message of
            chring etcd quotes a bounded prefix with the length
  options-newline
            an options value without a trailing newline (as docs/etcd.md's
            etcdctl example writes it) means what it means with one, for
            apply, show and the watcher
  guard     guard rails: `etcdctl del --prefix`, an empty file applied and
            a change moving over 60% of the keys are refused by every
            watcher (file kept, `chring etcd status` shows the reason) until
            PREFIX/guard is written; a lift counts once; the admin commands
            print what a change moves, refuse past a guard without --force,
            --dry-run writes nothing; a mistyped --prefix and an etcd that
            is down leave an existing --out file as it is
  report, status, wait, confirm: see their functions (acknowledged rollouts)
  health    chring health: members found down and up again after --fall
            and --rise probes (TCP and --http), --once, the key's lease
            (kill -9, SIGTERM); PREFIX/health/ is not part of the ring
  down, quorum, avail-watch: see their functions (availability; they take
            --probe, the C library's reading of the watcher's file)
Ends with a line "N passed, N failed"; exits 77 (skipped) when openssl is
missing for tls and token.
"""
import argparse
import base64
import contextlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from etcd_server import EtcdServer, make_test_pki  # noqa: E402

PREFIX = "/chring/test"
WAIT = 20.0  # bound on waiting for the watcher to publish one change

failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL: " + what, flush=True)


# The guard rails have a case of their own (guard); elsewhere a change may
# move any share of the keys (small rings: adding one member to one moves half).
UNGUARDED = ["--max-moved", "100%"]


class Chring:
    def __init__(self, path, url, flags=(), env=None, guard=False):
        """flags: more flags for every command (TLS, --user); env: more
        environment variables (ETCDCTL_PASSWORD); guard: keep the default
        --max-moved."""
        self.path, self.url, self.env = path, url, dict(env or {})
        self.flags = list(flags) + ([] if guard else UNGUARDED)

    def run(self, *args, prefix=PREFIX, timeout=60):
        env = dict(os.environ)
        env.pop("LD_LIBRARY_PATH", None)  # chring finds libchring through its rpath
        env.pop("ETCDCTL_PASSWORD", None)
        env.update(self.env)
        cmd = [self.path, "etcd", "--etcd", self.url, "--prefix", prefix] + self.flags + list(args)
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)

    def ok(self, *args, **kw):
        r = self.run(*args, **kw)
        check(r.returncode == 0, "chring etcd %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
        return r.stdout

    def show(self, fmt="ring-file"):
        return self.ok("show", "--format", fmt)


def file_field(text, name):
    m = re.search(r"^%%" + name + r" (\S+)$", text, re.M)
    return m.group(1) if m else None


def wait_for(predicate, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


# -- admin ---------------------------------------------------------------------

def case_admin(opts):
    with EtcdServer() as etcd:
        c = Chring(opts.chring, etcd.url)
        out = c.ok("add", "cache-a", "--weight", "1", "--zone", "eu-west-1a")
        check(out.splitlines()[-1].startswith("added cache-a (weight 1, zone eu-west-1a): revision "), "add prints: " + out)
        c.ok("add", "cache-b", "--weight", "2")
        c.ok("add", "caf%C3%A9%20au%20lait", "--weight", "1")
        code, got, _ = etcd.etcdctl("get", PREFIX + "/members/cache-a", "--print-value-only")
        check(got.strip() == "1 eu-west-1a", "member value is '<weight> <zone>': %r" % got)
        code, got, _ = etcd.etcdctl("get", "--prefix", PREFIX + "/members/caf", "--keys-only")
        check(got.strip() == PREFIX + "/members/café%20au%20lait", "key is the canonical spelling: %r" % got)

        c.ok("set-weight", "cache-a", "3")
        code, got, _ = etcd.etcdctl("get", PREFIX + "/members/cache-a", "--print-value-only")
        check(got.strip() == "3 eu-west-1a", "set-weight keeps the zone: %r" % got)
        c.ok("remove", "caf%C3%A9 au lait".replace(" ", "%20"))
        shown = json.loads(c.show("json"))
        check([m["id"] for m in shown["members"]] == ["cache-a", "cache-b"], "show json members: %s" % shown)
        check([m["weight"] for m in shown["members"]] == [3, 2], "show json weights")
        table = c.ok("show")
        check("fingerprint  " + shown["fingerprint"] in table and "cache-b" in table, "show table:\n" + table)
        check(int(shown["revision"]) == etcd.client().revision(), "show's revision is etcd's")

        # U+FEFF first in an id, the first member: the key is escaped, and a raw key
        # (etcdctl) is still read, not taken for a byte order mark.
        bom = "/chring/bom"
        c.ok("add", "%EF%BB%BFa", "--weight", "1", prefix=bom)
        code, got, _ = etcd.etcdctl("get", "--prefix", bom + "/members/", "--keys-only")
        check(got.strip() == bom + "/members/%EF%BB%BFa", "U+FEFF is escaped in the key: %r" % got)
        text = c.ok("show", "--format", "ring-file", prefix=bom)
        check("\n%EF%BB%BFa 1\n" in text and "\ufeff" not in text, "U+FEFF escaped in the ring file:\n" + text)
        raw = "/chring/bom-raw"
        etcd.etcdctl("put", raw + "/members/\ufeffb", "2")
        shown_raw = json.loads(c.ok("show", "--format", "json", prefix=raw))
        check([m["id"] for m in shown_raw["members"]] == ["%EF%BB%BFb"], "a raw U+FEFF key: %s" % shown_raw)
        c.ok("remove", "%EF%BB%BFb", "--min-members", "0", prefix=raw)  # its last member

        # Refusals: nothing reaches etcd (the revision does not move).
        before = etcd.client().revision()
        refusals = [
            (["add", "cache-a", "--weight", "1"], 1, "already a member"),
            (["add", "cache%2Da", "--weight", "1"], 1, "already a member"),  # the same id, spelled otherwise
            (["add", "bad%zz", "--weight", "1"], 1, "not followed by two hex digits"),
            (["add", "new", "--weight", "1000001"], 2, "over the limit"),
            (["add", "new", "--weight", "1", "--zone", "z" * 65], 1, "zone is 65 bytes"),
            (["add", "#x", "--weight", "1"], 1, "a comment, not a member line: its first field '#x' starts with '#'"),
            (["add", "%%x", "--weight", "1"], 1, "a directive, not a member line"),
            (["add", "a b", "--weight", "1"], 1, "the id field 'a b' has a blank at byte 2"),
            (["add", "new", "--weight", "1", "--zone", "#z"], 1, "the zone '#z' is read as no zone"),
            (["add", "new", "--weight", "1", "--zone", "a b"], 1, "found 4 fields (write a space inside an id or a zone as %20)"),
            (["remove", "nobody"], 1, "not a member"),
            (["set-weight", "nobody", "2"], 1, "not a member"),
            (["set-weight", "cache-a", "x"], 2, "not a whole number"),
        ]
        for args, status, message in refusals:
            r = c.run(*args)
            check(r.returncode == status and message in r.stderr and r.stderr.startswith("chring: "),
                  "%s: want exit %d with '%s', got %d: %s" % (args, status, message, r.returncode, r.stderr))
        check(etcd.client().revision() == before, "refusals wrote nothing")

        # apply: the prefix becomes the file, in one transaction.
        tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
        try:
            ring = os.path.join(tmp, "ring")
            with open(ring, "w") as f:
                f.write("%%placement native\n%%seed 7\n"
                        "cache-b 2 eu-west-1b\ncache-c 1\ndraining 0\n")
            before = etcd.client().revision()
            out = c.ok("apply", ring)
            check("2 added, 1 removed, 1 changed, options changed" in out, "apply summary: " + out)
            check(etcd.client().revision() == before + 1, "apply is one transaction (one revision)")
            text = c.show()
            check("%%seed 7\n" in text and "cache-a" not in text and "cache-c 1\n" in text, "applied:\n" + text)
            code, opts_value, _ = etcd.etcdctl("get", PREFIX + "/options", "--print-value-only")
            check(opts_value.startswith("%%placement native\n%%hasher xxh3\n%%seed 7\n%%tokens-per-weight 160"),
                  "options key holds the four directives: %r" % opts_value)
            out = c.ok("apply", ring)
            check("nothing written" in out, "applying the same file again writes nothing: " + out)
            # A plain member list keeps the options in etcd.
            with open(ring, "w") as f:
                f.write("cache-b 2 eu-west-1b\n")
            c.ok("apply", ring)
            check("%%seed 7\n" in c.show(), "a file without options keeps etcd's")

            before = etcd.client().revision()
            bad = [
                ("x 1\nx 2\n", "duplicate id 'x'"),
                ("%%placement ketama-unweighted\na 2\n", "out of range for placement ketama-unweighted"),
                ("%%colour red\na 1\n", "unknown directive"),
                ("a 1\n%%fingerprint 0x0000000000000001\n", "directive"),
            ]
            for text_, message in bad:
                with open(ring, "w") as f:
                    f.write(text_)
                r = c.run("apply", ring)
                check(r.returncode == 1 and message in r.stderr, "apply %r: %d %s" % (text_, r.returncode, r.stderr))
            check(etcd.client().revision() == before, "refused applies wrote nothing")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

        # A value etcdctl wrote by hand makes the state invalid: admin
        # commands that leave it so are refused; removing it repairs it.
        etcd.put(PREFIX + "/members/broken", "heavy")
        r = c.run("add", "fine", "--weight", "1")
        check(r.returncode == 1 and "broken" in r.stderr and "not a whole number" in r.stderr,
              "add over a broken state: " + r.stderr)
        r = c.run("show")
        check(r.returncode == 1 and "is not a valid ring" in r.stderr, "show of a broken state: " + r.stderr)
        r = c.run("set-weight", "broken", "2")
        check(r.returncode == 1 and "remove the member and add it again" in r.stderr, "set-weight of a broken value: " + r.stderr)
        c.ok("remove", "broken")
        c.ok("add", "fine", "--weight", "1")

        # A tab separates fields, as in a ring file line (docs/etcd.md, section 1),
        # in a member's value and in the options; any other control byte is refused.
        etcd.put(PREFIX + "/members/tabbed", "2\teu-west-1c\t# a comment")
        etcd.put(PREFIX + "/options", "%%seed\t9\n")
        text = c.show()
        check("\ntabbed 2 eu-west-1c\n" in text and "%%seed 9\n" in text, "tabs separate fields:\n" + text)
        for value, message in (("2\x0beu-west-1c", "weight '2\\x0Beu-west-1c': raw control byte 0x0B"),
                               ("2 eu\x1b[2J", "zone 'eu\\x1B[2J': raw control byte 0x1B"),
                               ("2\nb 3", "LF at byte 9: a member line is one line")):
            etcd.put(PREFIX + "/members/tabbed", value)
            r = c.run("show")
            check(r.returncode == 1 and (PREFIX + "/members/tabbed: " + message) in r.stderr,
                  "value %r: %d %s" % (value, r.returncode, r.stderr))
        c.ok("remove", "tabbed")

        # A refusal names keys, never lines of the text the state is read as:
        # a duplicate (an id spelled twice, a directive given twice) names its
        # first key; the options hold only the directives the library counts
        # as options, named in the message.
        etcd.put(PREFIX + "/members/f%69ne", "2")
        r = c.run("show")
        want = PREFIX + "/members/fine: duplicate id 'fine' (first as " + PREFIX + "/members/f%69ne)"
        check(r.returncode == 1 and want in r.stderr, "a duplicate id names the first key: " + r.stderr)
        etcd.client().delete(PREFIX + "/members/f%69ne")
        etcd.put(PREFIX + "/options", "%%seed 9\n# again\n%%seed 9\n")
        r = c.run("show")
        want = PREFIX + "/options (line 3): duplicate %%seed (first as " + PREFIX + "/options (line 1))"
        check(r.returncode == 1 and want in r.stderr, "a duplicate directive names its first line: " + r.stderr)
        etcd.put(PREFIX + "/options", "%%seed 9\n%%revision 4\n")
        r = c.run("show")
        want = (PREFIX + "/options: line 2: '%%revision' is not an option directive "
                "(%%placement, %%hasher, %%seed or %%tokens-per-weight)")
        check(r.returncode == 1 and want in r.stderr, "options hold option directives only: " + r.stderr)
        etcd.put(PREFIX + "/options", "%%seed\t9\n")
        check("%%seed 9\n" in c.show(), "repaired")


# -- conflict --------------------------------------------------------------------

class InterferingProxy:
    """HTTP/1.1 proxy in front of etcd; before forwarding the next
    POST /v3/kv/txn it runs `interfere()` (another writer's change)."""

    def __init__(self, etcd_port):
        self.etcd_port = etcd_port
        self.interfere = None
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.2)
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.done = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.done = True
        self.thread.join(5)
        self.listener.close()

    def _serve(self):
        while not self.done:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn):
        conn.settimeout(10)
        f = conn.makefile("rb")
        upstream = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                headers = {}
                while True:
                    h = f.readline().decode()
                    if h in ("\r\n", "\n", ""):
                        break
                    k, v = h.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
                body = f.read(int(headers.get("content-length", "0")))
                if path == "/v3/kv/txn" and self.interfere:
                    action, self.interfere = self.interfere, None
                    action()
                upstream.request(method, path, body, {"Content-Type": "application/json"})
                resp = upstream.getresponse()
                data = resp.read()
                conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % (resp.status, resp.reason.encode(), len(data)) + data)
        except (OSError, ValueError):
            return
        finally:
            upstream.close()
            conn.close()


def case_conflict(opts):
    with EtcdServer() as etcd:
        direct = Chring(opts.chring, etcd.url)
        direct.ok("add", "a", "--weight", "1")
        direct.ok("add", "b", "--weight", "1")
        proxy = InterferingProxy(etcd.client_port)
        try:
            c = Chring(opts.chring, proxy.url)
            kv = etcd.client()
            scenarios = [
                # another member added meanwhile (the prefix's range compare)
                (["add", "c", "--weight", "1"], lambda: kv.put(PREFIX + "/members/x", "1")),
                # the member itself removed meanwhile (the key's own compare)
                (["set-weight", "a", "5"], lambda: kv.delete(PREFIX + "/members/a")),
                (["remove", "b"], lambda: kv.put(PREFIX + "/members/b", "4")),
                (["apply", "-"], lambda: kv.put(PREFIX + "/options", "%%seed 3\n")),
            ]
            tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
            try:
                ring = os.path.join(tmp, "ring")
                with open(ring, "w") as f:
                    f.write("a 1\nb 1\nz 2\n")
                for args, action in scenarios:
                    args = [ring if a == "-" else a for a in args]
                    proxy.interfere = action
                    r = c.run(*args)
                    after, rev = kv.get_prefix(PREFIX + "/")
                    check(r.returncode == 1 and r.stderr.startswith("chring: etcd: conflict: "),
                          "%s under a concurrent write: %d %s" % (args, r.returncode, r.stderr))
                    check(proxy.interfere is None, "%s: the proxy saw the transaction" % args)
                    # Only the other writer's change landed.
                    if args[0] == "add":
                        check(PREFIX.encode() + b"/members/c" not in after, "add wrote nothing")
                    if args[0] == "set-weight":
                        check(PREFIX.encode() + b"/members/a" not in after, "set-weight did not re-create a")
                    if args[0] == "remove":
                        check(after.get(PREFIX.encode() + b"/members/b") == b"4", "remove wrote nothing")
                    if args[0] == "apply":
                        check(PREFIX.encode() + b"/members/z" not in after, "apply wrote nothing")
                # Without interference the same command goes through.
                r = c.run("add", "c", "--weight", "1")
                check(r.returncode == 0, "add without a concurrent write: " + r.stderr)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        finally:
            proxy.close()


# -- watch --------------------------------------------------------------------------

def watch_cmd(opts, url, out, *extra, guard=False, report=False):
    # --no-report unless `report`: a report write moves etcd's revision, which
    # most cases compare with the file's (the report cases use ReportingWatcher).
    return ([opts.chring, "watch", "--etcd", url, "--prefix", PREFIX, "--out", out] +
            ([] if report else ["--no-report"]) + ([] if guard else UNGUARDED) + list(extra))


def sigterm(proc, timeout=10):
    """SIGTERM to a watcher: its exit status, None if it did not exit in time."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def clean_up(watcher, etcd, tmp, leftovers=()):
    """The end of a case: kill a watcher still running, stop the etcd the case
    made itself (None: none), SIGKILL the processes `leftovers` (pids a hook
    left), remove the temporary directory."""
    if watcher is not None and watcher.poll() is None:
        watcher.kill()
        watcher.wait()
    if etcd is not None:
        etcd.cleanup()
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(tmp, ignore_errors=True)


def run_env(**extra):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env.pop("ETCDCTL_PASSWORD", None)
    env.update(extra)
    return env


def case_once(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    try:
        out = os.path.join(tmp, "ring")
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            r = subprocess.run(watch_cmd(opts, etcd.url, out, "--once"), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 1 and "fewer than --min-members 1" in r.stderr and not os.path.exists(out),
                  "--once on an empty prefix: the guard refuses it: " + r.stderr)
            r = subprocess.run(watch_cmd(opts, etcd.url, out, "--once", "--min-members", "0"), capture_output=True,
                               text=True, env=run_env(), timeout=60)
            check(r.returncode == 0, "--once --min-members 0 on an empty prefix: " + r.stderr)
            text = read(out)
            check(text is not None and "%%revision " in text and file_field(text, "fingerprint"),
                  "an empty ring is published: %r" % text)
            c.ok("add", "cache-a", "--weight", "1", "--zone", "z1")
            c.ok("add", "cache-b", "--weight", "2")
            r = subprocess.run(watch_cmd(opts, etcd.url, out, "--once"), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 0 and "published revision" in r.stderr, "--once: " + r.stderr)
            text = read(out)
            check(text == c.show(), "the watcher's file is `show --format ring-file`:\n%s" % text)
            check(int(file_field(text, "revision")) == etcd.client().revision(), "%%revision is etcd's revision")
            check(json.loads(c.show("json"))["fingerprint"] == file_field(text, "fingerprint"),
                  "show's fingerprint equals the file's")
            check(sorted(os.listdir(tmp)) == ["ring"], "no temporary file left: %s" % os.listdir(tmp))

            # --user against an etcd without authentication: as etcdctl, no token, it works.
            pw_file = os.path.join(tmp, "pw")
            with open(pw_file, "w") as f:
                f.write("secret\n")
            r = subprocess.run(watch_cmd(opts, etcd.url, os.path.join(tmp, "ring"), "--once", "--user", "someone",
                                         "--password-file", pw_file), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 0, "--user with authentication off: %d %s" % (r.returncode, r.stderr))
            os.unlink(pw_file)
            # https:// to an etcd without TLS: the message says to use http://.
            r = subprocess.run(watch_cmd(opts, etcd.url.replace("http://", "https://"), os.path.join(tmp, "never"),
                                         "--once", "--timeout", "5"),
                               capture_output=True, text=True, env=run_env(), timeout=60)
            check(r.returncode == 1 and "use an http:// URL" in r.stderr, "https:// to a plain etcd: %d %s"
                  % (r.returncode, r.stderr))

            etcd.put(PREFIX + "/members/cache-c", "1 zone extra")
            out2 = os.path.join(tmp, "never")
            r = subprocess.run(watch_cmd(opts, etcd.url, out2, "--once"), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 1 and "refused revision" in r.stderr and "cache-c" in r.stderr,
                  "--once on an invalid state: %d %s" % (r.returncode, r.stderr))
            check(not os.path.exists(out2), "an invalid state writes no file")
            url = etcd.url
        # etcd is gone: bounded failure.
        t0 = time.monotonic()
        r = subprocess.run(watch_cmd(opts, url, out, "--once", "--timeout", "2"), capture_output=True, text=True,
                           env=run_env(), timeout=60)
        check(r.returncode == 1 and "cannot list" in r.stderr, "--once without etcd: %d %s" % (r.returncode, r.stderr))
        check(time.monotonic() - t0 < 30, "--once without etcd returns within its timeout")
        r = subprocess.run(watch_cmd(opts, "localhost:2379", out, "--once"), capture_output=True, text=True,
                           env=run_env(), timeout=60)
        check(r.returncode == 2 and "http://" in r.stderr, "a URL without scheme is bad usage: " + r.stderr)
        r = subprocess.run([opts.chring, "watch", "--etcd", url, "--prefix", PREFIX + "/", "--out", out, "--once"],
                           capture_output=True, text=True, env=run_env(), timeout=60)
        check(r.returncode == 2 and "ends with '/'" in r.stderr, "a prefix ending in '/': " + r.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def case_follow(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    try:
        out = os.path.join(tmp, "ring")
        hook_log = os.path.join(tmp, "hooks")
        stderr_path = os.path.join(tmp, "watch.log")
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "cache-a", "--weight", "1")
            hook = 'echo "$CHRING_REVISION $CHRING_FINGERPRINT $CHRING_FILE" >> ' + hook_log
            with open(stderr_path, "w") as err:
                watcher = subprocess.Popen(watch_cmd(opts, etcd.url, out, "--exec", hook, "--keepalive", "1"),
                                           stderr=err, env=run_env())

            def published(revision):
                def ok():
                    text = read(out)
                    return text is not None and file_field(text, "revision") == str(revision)
                return ok

            def follows(what):
                rev = etcd.client().revision()
                ok = wait_for(published(rev))
                check(ok, "%s: the file reaches revision %d (has %s)" % (what, rev, file_field(read(out) or "", "revision")))
                if ok:
                    check(read(out) == c.show(), "%s: the file equals show --format ring-file" % what)
                return rev

            follows("start")
            c.ok("add", "cache-b", "--weight", "2", "--zone", "eu-1")
            follows("chring etcd add")
            etcd.put(PREFIX + "/members/cache-c", "3")
            follows("etcdctl put")
            # A multi-node change is one transaction, one revision, one file.
            kv = etcd.client()
            kv.txn([kv.op_put(PREFIX + "/members/n%d" % i, "1") for i in range(10)] +
                   [kv.op_delete(PREFIX + "/members/cache-a")])
            good = follows("a 11-change transaction")
            text = read(out)
            check(text.count("\nn") == 10 and "cache-a" not in text, "the transaction is in the file")

            # A malformed value: the last good file stays; the next valid state recovers.
            etcd.put(PREFIX + "/members/cache-b", "2 eu-1 extra")
            bad = etcd.client().revision()
            check(wait_for(lambda: "refused revision %d" % bad in (read(stderr_path) or "")),
                  "the malformed value is reported")
            log = read(stderr_path)
            check(re.search(r"refused revision %d: %s/members/cache-b: .*; keeping revision %d"
                            % (bad, re.escape(PREFIX), good), log) is not None, "the refusal names key and kept revision:\n" + log)
            check(file_field(read(out), "revision") == str(good), "the file keeps the last good revision")
            etcd.put(PREFIX + "/options", "%%seed x\n")
            bad2 = etcd.client().revision()
            check(wait_for(lambda: "refused revision %d" % bad2 in (read(stderr_path) or "")), "bad options are reported")
            check(file_field(read(out), "revision") == str(good), "the file still keeps the last good revision")
            etcd.put(PREFIX + "/options", "%%seed 9\n")
            etcd.put(PREFIX + "/members/cache-b", "2 eu-1")
            rev = follows("recovery")
            check("%%seed 9\n" in read(out), "the new options are in the file")

            # --exec ran once per publish, with the file's revision and fingerprint.
            # The file is renamed into place before the hook runs: wait for the hook's own line
            # (not for the number anywhere, which an earlier line's fingerprint may hold).
            check(wait_for(lambda: any(l.split()[:1] == [str(rev)] for l in (read(hook_log) or "").splitlines())),
                  "--exec ran for the last publish")
            hooks = [l.split() for l in read(hook_log).splitlines()]
            check(all(h[2] == out for h in hooks) and hooks[-1][:2] == [str(rev), file_field(read(out), "fingerprint")],
                  "--exec environment: %s" % hooks[-1:])
            check(str(bad) not in [h[0] for h in hooks], "--exec does not run for a refused state")
            check(sorted(os.listdir(tmp)) == ["hooks", "ring", "watch.log"], "no temporary file: %s" % os.listdir(tmp))

            code = sigterm(watcher)
            check(code == 0, "SIGTERM: exit 0 (got %s)" % code)
            log = read(stderr_path)
            check("stopping on SIGTERM" in log, "the watcher says it stops")
            lines = [l for l in log.splitlines() if l]
            check(all(l.startswith("chring watch: ") for l in lines), "every log line is one 'chring watch:' line")
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        shutil.rmtree(tmp, ignore_errors=True)


class LoggedWatcher:
    """A chring watch process whose stderr goes to a file."""

    def __init__(self, argv, log_path):
        self.log_path = log_path
        with open(log_path, "w") as err:
            self.proc = subprocess.Popen(argv, stderr=err, env=run_env())

    def log(self):
        return read(self.log_path) or ""

    def wait_log(self, text):
        return wait_for(lambda: text in self.log())

    def stop(self):
        if self.proc.poll() is None and sigterm(self.proc) is None:
            self.proc.kill()
            self.proc.wait()


def case_guard(opts):
    """Guard rails: a watcher never publishes a ring with fewer members than
    --min-members, nor one moving more than --max-moved of the keys, unless
    PREFIX/guard was written after the ring it last published; the admin
    commands print what a change moves and need --force past a guard."""
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watchers = []
    try:
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url, guard=True)
            for m in "abcd":
                out = c.ok("add", "cache-" + m, "--weight", "1")
            check(re.search(r"^add cache-d: moves 2\d\.\d\d% of the keys; members 3 -> 4; fingerprint 0x[0-9a-f]{16} -> "
                            r"0x[0-9a-f]{16}$", out, re.M), "add prints what it moves: " + out)
            check("cache-a -> cache-d: " in out, "add prints the flows, from -> to: " + out)
            # Reporting watchers (PREFIX.status/w0, w1): each refusal shows in
            # `chring etcd status`. Their report writes move etcd's revision,
            # so the checks follow fingerprints and the refusals' own revisions.
            outs = [os.path.join(tmp, "ring%d" % i) for i in range(2)]
            for i, out in enumerate(outs):
                watchers.append(LoggedWatcher(watch_cmd(opts, etcd.url, out, "--keepalive", "1", "--name", "w%d" % i,
                                                        guard=True, report=True),
                                              os.path.join(tmp, "watch%d.log" % i)))
            last = {}  # the fingerprint every watcher published last, and their files

            def published_by_all(what):
                fingerprint = json.loads(c.show("json"))["fingerprint"]
                ok = all(wait_for(lambda o=o: file_field(read(o) or "", "fingerprint") == fingerprint) for o in outs)
                check(ok, "%s: every watcher publishes %s" % (what, fingerprint))
                check(wait_for(lambda: status(c)[0] == 0), "%s: status says every process holds it: %s"
                      % (what, status(c)))
                last.update(fingerprint=fingerprint, texts=[read(o) for o in outs])

            def refused_by_all(revision, what):
                ok = all(w.wait_log("refused revision %d: guard: %s" % (revision, what)) for w in watchers)
                check(ok, "revision %d refused by every watcher (%s):\n%s" % (revision, what, watchers[0].log()[-2000:]))
                check([read(o) for o in outs] == last["texts"],
                      "revision %d: every file keeps %s" % (revision, last["fingerprint"]))
                check(wait_for(lambda: verdicts(status(c)[1]) == {"w0": "refused", "w1": "refused"}),
                      "status: both refused: %s" % (status(c),))
                code, doc, _ = status(c)
                check(code == 3 and all("guard: " + what in (p["detail"] or "") for p in doc["processes"]),
                      "status gives the guard's reason, exit 3: %d %s" % (code, doc))

            def written(r):
                """The revision a chring etcd change printed."""
                m = re.search(r": revision (\d+), fingerprint", r.stdout if hasattr(r, "stdout") else r)
                return int(m.group(1)) if m else -1

            def ring_file(name, text):
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    f.write(text)
                return path

            published_by_all("start")

            # `etcdctl del --prefix`: 0 members.
            code, deleted, err = etcd.etcdctl("del", "--prefix", PREFIX + "/", "-w", "json")
            check(code == 0, "etcdctl del --prefix: " + err)
            refused_by_all(int(json.loads(deleted)["header"]["revision"]),
                           "0 members of weight > 0, fewer than --min-members 1")
            kv = etcd.client()
            kv.txn([kv.op_put(PREFIX + "/members/cache-" + m, "1") for m in "abcd"])
            published_by_all("the members back")

            # An empty file applied: the admin command refuses it, --dry-run writes nothing.
            empty = ring_file("empty.ring", "# nothing\n")
            r = c.run("apply", empty)
            check(r.returncode == 1 and "0 members of weight > 0, fewer than --min-members 1: add --force" in r.stderr
                  and "nothing was written" in r.stderr, "apply of an empty file: %d %s" % (r.returncode, r.stderr))
            check("members 4 -> 0" in r.stdout, "the refusal says what it would do: " + r.stdout)
            r = c.run("apply", empty, "--dry-run")
            check(r.returncode == 0 and "dry run: nothing written; it needs --force" in r.stdout, "--dry-run: " + r.stdout)
            check(json.loads(c.show("json"))["fingerprint"] == last["fingerprint"],
                  "the refused and the dry-run apply wrote nothing")
            # Past the admin's own guard (its thresholds lifted, no --force): every watcher refuses.
            refused_by_all(written(c.ok("apply", empty, "--min-members", "0", "--max-moved", "100%")), "0 members")
            # The documented override: write PREFIX/guard.
            etcd.put(PREFIX + "/guard", "emptied on purpose")
            published_by_all("a lift written after the refusal")
            check(all(w.wait_log("guard lifted by %s/guard (revision " % PREFIX) for w in watchers), "the lift is logged")
            check("\ncache-" not in read(outs[0]), "the empty ring is published")
            four = ring_file("four.ring", "cache-a 1\ncache-b 1\ncache-c 1\ncache-d 1\n")
            c.ok("apply", four)  # the first members of an empty ring move nothing
            published_by_all("four members again")

            # A change moving over 60% of the keys.
            heavy = ring_file("heavy.ring", "cache-a 30\ncache-b 1\ncache-c 1\ncache-d 1\n")
            r = c.run("apply", heavy)
            m = re.search(r"moves (\d+\.\d\d)% of the keys, over --max-moved 50.00%", r.stderr)
            check(r.returncode == 1 and m is not None and float(m.group(1)) > 60,
                  "a 60%% move needs --force: %d %s" % (r.returncode, r.stderr))
            r = c.run("apply", heavy, "--max-moved", "100%")
            check(r.returncode == 0, "past the admin's guard: %s" % r.stderr)
            # PREFIX/guard still holds the lift of the empty ring: a lift counts
            # for one publish, so this change is refused.
            refused_by_all(written(r), "moves ")
            four_again = c.run("apply", four, "--max-moved", "1")
            check(four_again.returncode == 0, "back to four: " + four_again.stderr)
            published_by_all("a small change after a refusal")
            # --force writes the guard key in the same transaction: published at once.
            r = c.run("apply", heavy, "--force")
            check(r.returncode == 0 and "--force: moves" in r.stdout and "writing %s/guard" % PREFIX in r.stdout,
                  "apply --force: %d %s %s" % (r.returncode, r.stdout, r.stderr))
            published_by_all("a forced change")
            code, note, _ = etcd.etcdctl("get", PREFIX + "/guard", "--print-value-only")
            check(note.startswith("lifted by chring etcd apply %s --force on " % heavy), "the guard key says who: %r" % note)
            # remove with a too-small ring needs --force too.
            r = c.run("remove", "cache-a", "--dry-run")
            check(r.returncode == 0 and "remove cache-a: moves" in r.stdout and "dry run: nothing written; it needs --force"
                  in r.stdout, "remove --dry-run: " + r.stdout)
            check(json.loads(c.show("json"))["fingerprint"] == last["fingerprint"], "--dry-run wrote nothing")
            for w in watchers:
                w.stop()
            watchers = []

            # A mistyped --prefix: every watcher whose file exists keeps it, and
            # reports the refusal under the prefix it was given.
            kept = [read(o) for o in outs]
            typo = PREFIX + "-typo"
            for i, out in enumerate(outs):
                watchers.append(LoggedWatcher([opts.chring, "watch", "--etcd", etcd.url, "--prefix", typo, "--out", out,
                                               "--name", "w%d" % i], os.path.join(tmp, "typo%d.log" % i)))
            for w, out, text in zip(watchers, outs, kept):
                check(w.wait_log("guard: 0 members of weight > 0, fewer than --min-members 1"),
                      "a mistyped prefix is refused:\n" + w.log())
                check("keeping %s (revision %s fingerprint %s" % (out, file_field(text, "revision"), last["fingerprint"])
                      in w.log(), "the existing file is adopted:\n" + w.log())
                check(read(out) == text, "the file is kept")
            check(wait_for(lambda: verdicts(status(c, prefix=typo)[1]) == {"w0": "refused", "w1": "refused"}),
                  "status under the mistyped prefix: both refused: %s" % (status(c, prefix=typo),))
            for w in watchers:
                w.stop()
            watchers = []
            kept = kept[0]
            url = etcd.url

        # Startup without etcd: the existing file is kept and adopted.
        w = LoggedWatcher(watch_cmd(opts, url, outs[0], "--timeout", "1", "--interval-max", "1", guard=True),
                          os.path.join(tmp, "down.log"))
        watchers = [w]
        check(w.wait_log("until etcd answers") and w.wait_log("re-listing after"),
              "without etcd the watcher keeps its file and retries:\n" + w.log())
        check(read(outs[0]) == kept, "the file is untouched while etcd is down")
        w.stop()
        check(w.proc.returncode == 0 and read(outs[0]) == kept, "stopped: the file is still the last good one")
    finally:
        for w in watchers:
            w.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def case_catchup(opts):
    """A stopped watcher falls behind by ~12 MB of changes, etcd compacts
    them away, the watcher resumes: it catches up (from the stream's backlog
    or, past the compaction, by listing again) to the last revision, with no
    false alarm from the catch-up responses' headers."""
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    try:
        out = os.path.join(tmp, "ring")
        stderr_path = os.path.join(tmp, "watch.log")
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "seed", "--weight", "1")
            with open(stderr_path, "w") as err:
                watcher = subprocess.Popen(watch_cmd(opts, etcd.url, out, "--keepalive", "0.5", "--interval-max", "1"),
                                           stderr=err, env=run_env())
            check(wait_for(lambda: read(out) is not None), "the first file is published")
            watcher.send_signal(signal.SIGSTOP)
            kv = etcd.client()
            pad = " # " + "x" * 20000  # a comment: large values, the same ring
            for i in range(600):
                last = kv.put(PREFIX + "/members/n%02d" % (i % 50), "%d%s" % (1 + i % 3, pad))
            etcd.compact(last)
            watcher.send_signal(signal.SIGCONT)
            ok = wait_for(lambda: file_field(read(out) or "", "revision") == str(last))
            check(ok, "the watcher reaches revision %d after SIGCONT (has %s)" % (last, file_field(read(out) or "", "revision")))
            check(read(out) == c.show(), "the caught-up file equals show --format ring-file")
            log = read(stderr_path)
            check("went back" not in log and "refused" not in log, "no false alarm while catching up:\n" + log)
            watcher.send_signal(signal.SIGTERM)
            check(watcher.wait(10) == 0, "SIGTERM: exit 0")
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.send_signal(signal.SIGCONT)
            watcher.kill()
            watcher.wait()
        shutil.rmtree(tmp, ignore_errors=True)


# -- TLS and authentication ---------------------------------------------------------

WATCH_ROLE_USERS = {"root": "root-pw", "admin": "admin-pw", "watcher": "watcher-pw", "outsider": "outsider-pw",
                    "reader": "reader-pw"}


def secure_etcd(tmp, *extra_args):
    """An etcd with mutual TLS and authentication on: root; `admin` with a
    read-write role on PREFIX/ (and read on PREFIX.status/), `watcher` with
    a read-only role on it (and readwrite on PREFIX.status/, for its report),
    `reader` with only read on PREFIX/, `outsider` with a read-only role on
    another prefix. (EtcdServer, pki, {user: password file})."""
    pki = make_test_pki(os.path.join(tmp, "pki"))
    etcd = EtcdServer(tls=pki, extra_args=extra_args)
    try:
        etcd.start()
        for role, perm, prefix in (("chring-admin", "readwrite", PREFIX + "/"),
                                   ("chring-admin", "read", PREFIX + ".status/"),
                                   ("chring-watch", "read", PREFIX + "/"),
                                   ("chring-watch", "readwrite", PREFIX + ".status/"),
                                   ("chring-read", "read", PREFIX + "/"),
                                   ("elsewhere-watch", "read", "/elsewhere/")):
            if role not in etcd._etcdctl_ok("role", "list").split():
                etcd._etcdctl_ok("role", "add", role)
            etcd._etcdctl_ok("role", "grant-permission", role, perm, prefix, "--prefix=true")
        for user, role in (("admin", "chring-admin"), ("watcher", "chring-watch"), ("outsider", "elsewhere-watch"),
                           ("reader", "chring-read")):
            etcd._etcdctl_ok("user", "add", user, "--new-user-password=" + WATCH_ROLE_USERS[user])
            etcd._etcdctl_ok("user", "grant-role", user, role)
        etcd.enable_auth(WATCH_ROLE_USERS["root"])
    except BaseException:
        etcd.cleanup()
        raise
    files = {}
    for user, password in list(WATCH_ROLE_USERS.items()) + [("wrong", "not-the-password")]:
        files[user] = os.path.join(tmp, user + ".pw")
        with open(files[user], "w") as f:
            f.write(password + "\n")
        os.chmod(files[user], 0o600)
    return etcd, pki, files


def tls_flags(pki, client="client", ca="ca"):
    cert, key = pki[client]
    return ["--cacert", pki[ca], "--cert", cert, "--key", key]


def case_tls(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    etcd = None
    try:
        etcd, pki, pw = secure_etcd(tmp)
        admin = Chring(opts.chring, etcd.url, tls_flags(pki) + ["--user", "admin", "--password-file", pw["admin"]])
        out = admin.ok("add", "cache-a", "--weight", "1")
        check(out.splitlines()[-1].startswith("added cache-a"), "the admin adds over mutual TLS: " + out)
        admin.ok("add", "cache-b", "--weight", "2")

        # The watcher: read-only role, password from ETCDCTL_PASSWORD.
        ring = os.path.join(tmp, "ring")
        log_path = os.path.join(tmp, "watch.log")
        with open(log_path, "w") as err:
            watcher = subprocess.Popen(watch_cmd(opts, etcd.url, ring, "--keepalive", "1", "--user", "watcher",
                                                 *tls_flags(pki)),
                                       stderr=err, env=run_env(ETCDCTL_PASSWORD=WATCH_ROLE_USERS["watcher"]))
        reader = Chring(opts.chring, etcd.url, tls_flags(pki) + ["--user", "watcher"],
                        env={"ETCDCTL_PASSWORD": WATCH_ROLE_USERS["watcher"]})

        def converged(what):
            rev = etcd.client().revision()
            ok = wait_for(lambda: file_field(read(ring) or "", "revision") == str(rev))
            check(ok, "%s: the watcher reaches revision %d (has %s)\n%s"
                  % (what, rev, file_field(read(ring) or "", "revision"), read(log_path)))
            if ok:
                check(read(ring) == reader.show(), "%s: the file equals show --format ring-file (read-only user)" % what)

        converged("start")
        admin.ok("add", "cache-c", "--weight", "3", "--zone", "z1")
        converged("admin add")
        admin.ok("set-weight", "cache-a", "4")
        converged("admin set-weight")
        apply_file = os.path.join(tmp, "apply.ring")
        with open(apply_file, "w") as f:
            f.write("%%seed 5\ncache-a 4\ncache-d 1\n")
        admin.ok("apply", apply_file)
        converged("admin apply")
        check("%%seed 5\n" in (read(ring) or ""), "the applied options reach the watcher")

        # The read-only role cannot write, and says so.
        ro = Chring(opts.chring, etcd.url, tls_flags(pki) + ["--user", "watcher", "--password-file", pw["watcher"]])
        before = etcd.client().revision()
        r = ro.run("add", "intruder", "--weight", "1")
        check(r.returncode == 1 and "user 'watcher' may not write the keys under %s/" % PREFIX in r.stderr
              and "readwrite" in r.stderr, "a write with the read-only role: %d %s" % (r.returncode, r.stderr))
        check(etcd.client().revision() == before, "the refused write wrote nothing")

        # Each wrong setting: `watch --once` fails (exit 1) naming it; nothing is written.
        never = os.path.join(tmp, "never")
        cert, key = pki["client"]
        good_user = ["--user", "watcher", "--password-file", pw["watcher"]]
        failures_ = [
            ("no client certificate", ["--cacert", pki["ca"]] + good_user,
             ["asks for a client certificate", "--cert FILE and --key FILE"]),
            ("the wrong CA", tls_flags(pki, ca="other_ca") + good_user,
             ["not signed by --cacert " + pki["other_ca"]]),
            ("no CA (the system's)", ["--cert", cert, "--key", key] + good_user,
             ["give the CA that signed it with --cacert"]),
            ("a client certificate of another CA", tls_flags(pki, client="rogue") + good_user,
             ["refused the client certificate --cert " + pki["rogue"][0]]),
            ("a key that is not the certificate's", ["--cacert", pki["ca"], "--cert", cert, "--key",
                                                      pki["rogue"][1]] + good_user,
             ["cannot use --key " + pki["rogue"][1]]),
            ("a certificate with a Common Name", tls_flags(pki, client="client_cn") + good_user,
             ["refuses a client certificate with a Common Name", pki["client_cn"][0]]),
            ("a CA file that is not there", ["--cacert", os.path.join(tmp, "nope.pem"), "--cert", cert, "--key", key]
             + good_user, ["--cacert " + os.path.join(tmp, "nope.pem") + ": cannot read it"]),
            ("a wrong password", tls_flags(pki) + ["--user", "watcher", "--password-file", pw["wrong"]],
             ["refused user 'watcher' with the password from --password-file " + pw["wrong"],
              "wrong password, or no such user"]),
            ("no user", tls_flags(pki), ["authentication enabled: give --user NAME"]),
            ("a role outside the prefix", tls_flags(pki) + ["--user", "outsider", "--password-file", pw["outsider"]],
             ["user 'outsider' may not read the keys under %s/" % PREFIX, "permission denied"]),
        ]
        for what, flags, messages in failures_:
            t0 = time.monotonic()
            r = subprocess.run(watch_cmd(opts, etcd.url, never, "--once", "--timeout", "5", *flags),
                               capture_output=True, text=True, env=run_env(), timeout=60)
            check(r.returncode == 1 and all(m in r.stderr for m in messages),
                  "%s: want exit 1 naming %s, got %d: %s" % (what, messages, r.returncode, r.stderr))
            check(time.monotonic() - t0 < 30, "%s: bounded" % what)
        check(not os.path.exists(never), "no failure wrote a file")
        # The same refusals from chring etcd: show by a user outside the prefix.
        r = Chring(opts.chring, etcd.url, tls_flags(pki) + ["--user", "outsider", "--password-file",
                                                            pw["outsider"]]).run("show")
        check(r.returncode == 1 and r.stderr.startswith("chring: etcd: ") and "user 'outsider' may not read" in r.stderr,
              "show outside the role: %d %s" % (r.returncode, r.stderr))

        # Usage errors (exit 2): the password never on the command line, flags that go together.
        usage = [
            (tls_flags(pki) + ["--user", "watcher:watcher-pw"], ["--password-file", "ETCDCTL_PASSWORD"]),
            (tls_flags(pki) + ["--user", "watcher"], ["needs its password"]),
            (["--cacert", pki["ca"], "--cert", cert] + good_user, ["--cert needs --key"]),
            (tls_flags(pki) + ["--password-file", pw["watcher"]], ["--password-file needs --user"]),
        ]
        for flags, messages in usage:
            r = subprocess.run(watch_cmd(opts, etcd.url, never, "--once", *flags), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 2 and all(m in r.stderr for m in messages),
                  "%s: want exit 2 with %s, got %d: %s" % (flags, messages, r.returncode, r.stderr))
        http_url = etcd.url.replace("https://", "http://")
        r = subprocess.run(watch_cmd(opts, http_url, never, "--once", *tls_flags(pki), *good_user),
                           capture_output=True, text=True, env=run_env(), timeout=60)
        check(r.returncode == 2 and "is not https://" in r.stderr, "TLS flags with http://: %s" % r.stderr)
        r = subprocess.run(watch_cmd(opts, "https://watcher:pw@127.0.0.1:%d" % etcd.client_port, never, "--once"),
                           capture_output=True, text=True, env=run_env(), timeout=60)
        check(r.returncode == 2 and "holds no user or password" in r.stderr, "user:pass in the URL: %s" % r.stderr)
        r = subprocess.run(watch_cmd(opts, http_url, never, "--once", "--timeout", "5", *good_user),
                           capture_output=True, text=True, env=run_env(), timeout=60)
        check(r.returncode == 1 and "https://" in r.stderr, "http:// to a TLS etcd: %d %s" % (r.returncode, r.stderr))
        # --insecure-skip-tls-verify (etcdctl's): no CA needed.
        r = subprocess.run(watch_cmd(opts, etcd.url, os.path.join(tmp, "insecure"), "--once",
                                     "--insecure-skip-tls-verify", "--cert", cert, "--key", key, *good_user),
                           capture_output=True, text=True, env=run_env(), timeout=60)
        check(r.returncode == 0, "--insecure-skip-tls-verify: %d %s" % (r.returncode, r.stderr))
        # Without --cacert, SSL_CERT_FILE names the CAs (as for etcdctl, a Go program).
        r = subprocess.run(watch_cmd(opts, etcd.url, os.path.join(tmp, "by-env"), "--once", "--cert", cert,
                                     "--key", key, *good_user),
                           capture_output=True, text=True, env=run_env(SSL_CERT_FILE=pki["ca"]), timeout=60)
        check(r.returncode == 0, "SSL_CERT_FILE instead of --cacert: %d %s" % (r.returncode, r.stderr))

        # The watcher followed all along and stops cleanly.
        converged("after the refusals")

        # Reports under authentication: the watcher's role has readwrite on
        # PREFIX.status/ (the lease needs nothing more, and its revocation
        # write permission on the key); a role without it follows the ring
        # all the same and says once why it cannot report.
        reporting = ReportingWatcher(opts, etcd.url, tmp, "rbac", "--user", "watcher", "--password-file",
                                     pw["watcher"], *tls_flags(pki))
        unreported = ReportingWatcher(opts, etcd.url, tmp, "reader", "--user", "reader", "--password-file",
                                      pw["reader"], *tls_flags(pki))
        try:
            admin_status = lambda: admin.run("status", "--format", "json")  # noqa: E731
            check(wait_for(lambda: admin_status().returncode == 0 and "rbac" in admin_status().stdout),
                  "a watcher with readwrite on %s.status/ reports, status (admin: read) shows it: %s\n%s"
                  % (PREFIX, admin_status().stdout, reporting.log()))
            check(wait_for(lambda: reporting.held() is not None and unreported.held() is not None
                           and unreported.held()[1] == reporting.held()[1]),
                  "a watcher that may not report follows the ring all the same:\n" + unreported.log())
            check(wait_for(lambda: "may not write the keys under %s.status/" % PREFIX in unreported.log()),
                  "and says why it cannot report:\n" + unreported.log())
            time.sleep(1.5)  # its tries go on
            check(unreported.log().count("cannot write the report") == 1, "once:\n" + unreported.log())
            check(reporting.terminate() == 0 and unreported.terminate() == 0, "both stop on SIGTERM, exit 0")
            check(wait_for(lambda: admin.run("status").returncode == 4, timeout=5),
                  "the reporting watcher's lease was revoked: nobody reports\n" + reporting.log())
            check("revoke" not in reporting.log(), "revoked without error:\n" + reporting.log())
        finally:
            reporting.kill()
            unreported.kill()

        code = sigterm(watcher)
        check(code == 0, "SIGTERM: exit 0 (got %s)" % code)
        log = read(log_path)
        check("re-listing" not in log, "the watcher never had to list again:\n" + log)
    finally:
        clean_up(watcher, etcd, tmp)


def case_token(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    etcd = None
    try:
        etcd, pki, pw = secure_etcd(tmp, "--auth-token", "simple", "--auth-token-ttl", "1")
        admin = Chring(opts.chring, etcd.url, tls_flags(pki) + ["--user", "admin", "--password-file", pw["admin"]])
        admin.ok("add", "seed", "--weight", "1")
        ring = os.path.join(tmp, "ring")
        hooks = os.path.join(tmp, "hooks")
        log_path = os.path.join(tmp, "watch.log")
        # The hook outlasts the token: after it the watcher's token is invalid.
        hook = 'echo "$CHRING_REVISION" >> %s; sleep 3' % hooks
        with open(log_path, "w") as err:
            watcher = subprocess.Popen(watch_cmd(opts, etcd.url, ring, "--keepalive", "1", "--exec", hook,
                                                 "--user", "watcher", "--password-file", pw["watcher"],
                                                 *tls_flags(pki)),
                                       stderr=err, env=run_env())
        check(wait_for(lambda: read(hooks) is not None), "the first publish ran the hook\n" + (read(log_path) or ""))
        first = int((read(hooks) or "0").split()[0])
        # While the hook sleeps (and the token expires): five changes, five revisions.
        for i in range(5):
            admin.ok("add", "n%d" % i, "--weight", "1")
        last = etcd.client().revision()
        ok = wait_for(lambda: file_field(read(ring) or "", "revision") == str(last), timeout=60)
        log = read(log_path) or ""
        check(ok, "the watcher reaches revision %d (has %s):\n%s" % (last, file_field(read(ring) or "", "revision"), log))
        check(read(ring) == Chring(opts.chring, etcd.url, admin.flags, guard=True).show(), "the file equals show --format ring-file")
        check("authenticated again, watching from revision %d" % (first + 1) in log,
              "the watch was created again from revision %d with a new token:\n%s" % (first + 1, log))
        # The probe's token, too, expired during the next hook: renewed on the spot.
        check(wait_for(lambda: "(etcdserver: invalid auth token): authenticated again\n" in (read(log_path) or ""),
                       timeout=30),
              "the probe renewed its token:\n" + (read(log_path) or ""))
        log = read(log_path) or ""
        check("re-listing" not in log, "no re-list: the watch went on from where it was:\n" + log)
        revisions = [int(x) for x in (read(hooks) or "").split()]
        check(revisions == sorted(set(revisions)) and revisions[-1] == last,
              "each publish a newer revision, the last %d: %s" % (last, revisions))

        # etcd restarts: the watcher lists again (the stream ended) with its
        # token or a new one, and follows on. (etcd 3.4 replays the
        # authentications in its log, so a simple token may survive.)
        etcd.kill()
        etcd.start()
        admin.ok("add", "after-restart", "--weight", "1")
        last = etcd.client().revision()
        ok = wait_for(lambda: file_field(read(ring) or "", "revision") == str(last), timeout=60)
        log = read(log_path) or ""
        check(ok, "after etcd's restart the watcher reaches revision %d:\n%s" % (last, log))
        check("re-listing" in log, "after etcd's restart: a re-list:\n" + log)
        code = sigterm(watcher, 15)
        check(code == 0, "SIGTERM: exit 0 (got %s)" % code)
    finally:
        clean_up(watcher, etcd, tmp)


# -- the fleet's reports: chring watch's report, chring etcd status, --wait, --confirm --------

STATUS_DIR = PREFIX + ".status/"


class ReportingWatcher:
    """A `chring watch` that reports itself under STATUS_DIR (named `name`,
    or HOSTNAME:PID when None), its log in `tmp`."""

    def __init__(self, opts, url, tmp, name, *extra, env=None):
        self.name = name
        base = name if name is not None else "default"
        self.out = os.path.join(tmp, base + ".ring")
        self.log_path = os.path.join(tmp, base + ".log")
        cmd = [opts.chring, "watch", "--etcd", url, "--prefix", PREFIX, "--out", self.out,
               "--keepalive", "1", "--interval-max", "1"] + UNGUARDED + \
            (["--name", name] if name is not None else []) + list(extra)
        with open(self.log_path, "w") as err:
            self.proc = subprocess.Popen(cmd, stderr=err, env=env or run_env())
        if name is None:
            self.name = "%s:%d" % (socket.gethostname(), self.proc.pid)

    def log(self):
        return read(self.log_path) or ""

    def held(self):
        """(revision, fingerprint) of its file, or None."""
        text = read(self.out) or ""
        rev, fp = file_field(text, "revision"), file_field(text, "fingerprint")
        return (int(rev), fp) if rev and fp else None

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def terminate(self, timeout=15):
        """SIGTERM (and SIGCONT, should it be stopped): its exit status."""
        self.signal(signal.SIGTERM)
        self.signal(signal.SIGCONT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def reports(etcd):
    """{key's last part: the report's JSON} of every process reporting now."""
    kv = etcd.client()
    try:
        kvs, _ = kv.get_prefix(STATUS_DIR)
    finally:
        kv.close()
    return {k[len(STATUS_DIR):].decode(): json.loads(v) for k, v in kvs.items()}


def report_of(etcd, key):
    return reports(etcd).get(key)


def status(c, prefix=PREFIX):
    """(exit status, JSON or None, stderr) of `chring etcd status --format json`."""
    r = c.run("status", "--format", "json", prefix=prefix)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    return r.returncode, doc, r.stderr


def verdicts(doc):
    return {p["name"]: p["verdict"] for p in (doc or {}).get("processes", [])}


def holds_current(etcd, c, keys):
    """Every one of `keys` reports the ring `show` says is in etcd now."""
    shown = json.loads(c.show("json"))
    now = reports(etcd)
    return all(k in now and now[k]["state"] == "published" and now[k]["fingerprint"] == shown["fingerprint"]
               for k in keys)


@contextlib.contextmanager
def reporting_run():
    """(a temporary directory, a list for the case's ReportingWatchers): on
    leaving, every watcher in the list is killed and the directory removed."""
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watchers = []
    try:
        yield tmp, watchers
    finally:
        for w in watchers:
            w.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def case_report(opts):
    with reporting_run() as (tmp, watchers):
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "cache-a", "--weight", "1")
            w1 = ReportingWatcher(opts, etcd.url, tmp, "web 1", "--report-ttl", "2")
            w2 = ReportingWatcher(opts, etcd.url, tmp, None, "--report-ttl", "2")
            watchers += [w1, w2]
            key1, key2 = "web%201", w2.name
            check(wait_for(lambda: report_of(etcd, key1) and report_of(etcd, key2)),
                  "both reports appear under %s: %s\n%s" % (STATUS_DIR, reports(etcd), w1.log()))
            rep = report_of(etcd, key1) or {}
            held = w1.held()
            check(rep.get("state") == "published" and held is not None
                  and (rep.get("revision"), rep.get("fingerprint")) == held,
                  "the report holds the file's revision and fingerprint: %s, file %s" % (rep, held))
            check(rep.get("name") == key1 and rep.get("host") == socket.gethostname() and rep.get("pid") == w1.proc.pid
                  and rep.get("out") == w1.out and rep.get("since") and rep.get("version") == 1,
                  "the report names the process: %s" % rep)
            check(report_of(etcd, key2) and report_of(etcd, key2)["pid"] == w2.proc.pid,
                  "the default name is HOSTNAME:PID: %s" % sorted(reports(etcd)))
            # Reports live outside P/: they move etcd's revision, never the ring's.
            time.sleep(2.5)  # several keepalives
            check(w1.held() == held and w1.log().count("published revision") == 1,
                  "the reports and their keepalives publish nothing:\n" + w1.log())
            check(etcd.client().revision() > held[0], "the report writes moved etcd's revision")
            kvs, _ = etcd.client().get_prefix(PREFIX + "/")
            check(all(not k.startswith(STATUS_DIR.encode()) for k in kvs), "no report under P/")

            # A refusal: reported with the refused revision and the reason; the held ring stays.
            bad = etcd.client().put(PREFIX + "/members/cache-b", "heavy")
            check(wait_for(lambda: (report_of(etcd, key1) or {}).get("state") == "refused"
                           and (report_of(etcd, key2) or {}).get("state") == "refused"),
                  "the refusal is reported: %s" % reports(etcd))
            rep = report_of(etcd, key1) or {}
            check(rep.get("refused_revision") == bad and PREFIX + "/members/cache-b" in rep.get("reason", "")
                  and "not a whole number" in rep.get("reason", "")
                  and (rep.get("revision"), rep.get("fingerprint")) == held,
                  "the refusal names revision %d, the key and the reason, and keeps the ring: %s" % (bad, rep))
            c.ok("remove", "cache-b")
            check(wait_for(lambda: all((report_of(etcd, k) or {}).get("state") == "published" for k in (key1, key2))),
                  "the repair is reported: %s" % reports(etcd))

            # A lease etcd no longer knows (revoked by hand): written again under a new one.
            code, out, _ = etcd.etcdctl("get", STATUS_DIR + key1, "-w", "json")
            lease = json.loads(out)["kvs"][0]["lease"]
            etcd.etcdctl("lease", "revoke", "%x" % lease)
            check(wait_for(lambda: report_of(etcd, key1) is not None, timeout=10),
                  "a report whose lease was revoked is written again:\n" + w1.log())
            check("expired: writing the report again under a new one" in w1.log(), "and the watcher says so")

            # etcd away: the failure is logged once, the report written again after.
            etcd.kill()
            time.sleep(3)
            etcd.start()
            check(wait_for(lambda: "reporting again at " + STATUS_DIR + key1 in w1.log()),
                  "the watcher reports again after etcd's restart:\n" + w1.log())
            lines = [l for l in w1.log().splitlines() if "the report " + STATUS_DIR + key1 + ":" in l]
            check(len(lines) == 1, "one line for the failure while etcd was away:\n" + "\n".join(lines))
            check(wait_for(lambda: holds_current(etcd, c, [key1, key2])), "both report the ring again")

            # Two watchers under one --name overwrite each other's report: each
            # says so once. A watcher restarted under its name (its predecessor's
            # report still there) is no other process.
            d1 = ReportingWatcher(opts, etcd.url, tmp, "dup")
            watchers.append(d1)
            check(wait_for(lambda: (report_of(etcd, "dup") or {}).get("pid") == d1.proc.pid), "dup reports")
            d1.kill()
            d2 = ReportingWatcher(opts, etcd.url, tmp, "dup")
            watchers.append(d2)
            check(wait_for(lambda: (report_of(etcd, "dup") or {}).get("pid") == d2.proc.pid),
                  "the restarted watcher takes its name over")
            time.sleep(0.5)
            check("another process" not in d2.log(), "not at the restarted watcher's first report:\n" + d2.log())
            other = os.path.join(tmp, "other")
            os.makedirs(other)
            d3 = ReportingWatcher(opts, etcd.url, other, "dup")  # another file, the same name
            watchers.append(d3)
            check(wait_for(lambda: (report_of(etcd, "dup") or {}).get("pid") == d3.proc.pid), "a second 'dup' writes")
            c.ok("add", "cache-c", "--weight", "1")
            check(wait_for(lambda: "another process reported as dup" in d2.log() + d3.log()),
                  "a duplicate name is said:\n" + d2.log() + d3.log())
            d2.kill()
            d3.kill()

            # kill -9: the report goes when its lease expires; SIGTERM: at once.
            w2.kill()
            check(wait_for(lambda: report_of(etcd, key2) is None, timeout=15),
                  "a killed watcher's report goes with its lease: %s" % sorted(reports(etcd)))
            check(w1.terminate() == 0, "SIGTERM: exit 0")
            check(report_of(etcd, key1) is None, "a clean exit revokes the lease: its report is gone")
            check("revoke" not in w1.log(), "the revocation went through:\n" + w1.log())


def case_status(opts):
    with reporting_run() as (tmp, watchers):
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "cache-a", "--weight", "1")
            code, doc, err = status(c)
            check(code == 4 and doc and doc["processes"] == [] and doc["summary"]["processes"] == 0,
                  "no process reports: exit 4: %d %s %s" % (code, doc, err))
            r = c.run("status")
            check(r.returncode == 4 and "No process reports under " + STATUS_DIR in r.stdout, "table: " + r.stdout)
            a = ReportingWatcher(opts, etcd.url, tmp, "a")
            b = ReportingWatcher(opts, etcd.url, tmp, "b", "--report-ttl", "60")
            watchers += [a, b]
            check(wait_for(lambda: holds_current(etcd, c, ["a", "b"])), "both report: %s" % reports(etcd))
            code, doc, err = status(c)
            shown = json.loads(c.show("json"))
            check(code == 0 and verdicts(doc) == {"a": "holds", "b": "holds"}
                  and doc["ring"]["fingerprint"] == shown["fingerprint"] and doc["ring"]["valid"] is True
                  and doc["summary"] == {"processes": 2, "hold": 2, "lag": 0, "refused": 0, "availability_agree": 2},
                  "every process holds the ring: exit 0: %d %s %s" % (code, doc, err))
            r = c.run("status")
            check(r.returncode == 0 and "2 of 2 processes hold the current ring; 0 lag; 0 refused" in r.stdout
                  and shown["fingerprint"] in r.stdout, "table:\n" + r.stdout)

            # A stopped watcher lags (its lease outlives the check).
            b.signal(signal.SIGSTOP)
            c.ok("add", "cache-b", "--weight", "2")
            check(wait_for(lambda: holds_current(etcd, c, ["a"])), "a follows")
            code, doc, err = status(c)
            lag = [p for p in (doc or {}).get("processes", []) if p["name"] == "b"]
            check(code == 3 and verdicts(doc) == {"a": "holds", "b": "lags"} and lag
                  and "holds another ring" in (lag[0]["detail"] or "")
                  and doc["summary"] == {"processes": 2, "hold": 1, "lag": 1, "refused": 0, "availability_agree": 2},
                  "a stopped watcher lags: exit 3: %d %s" % (code, doc))
            r = c.run("status")
            check(r.returncode == 3 and "1 of 2 processes hold the current ring; 1 lag; 0 refused" in r.stdout,
                  "table:\n" + r.stdout)
            b.signal(signal.SIGCONT)
            check(wait_for(lambda: status(c)[0] == 0), "after SIGCONT: exit 0 again")

            # An invalid state: every process refuses it, with the reason.
            etcd.put(PREFIX + "/members/cache-c", "2 z extra")
            check(wait_for(lambda: status(c)[1] and verdicts(status(c)[1]) == {"a": "refused", "b": "refused"}),
                  "both refuse: %s" % (status(c),))
            code, doc, err = status(c)
            check(code == 3 and doc["ring"]["valid"] is False and PREFIX + "/members/cache-c" in doc["ring"]["error"]
                  and all(PREFIX + "/members/cache-c" in p["detail"] for p in doc["processes"])
                  and doc["summary"]["refused"] == 2,
                  "an invalid ring, refused with the reason: exit 3: %d %s" % (code, doc))
            r = c.run("status")
            check(r.returncode == 3 and "refused revision" in r.stdout and "0 of 2 processes" in r.stdout,
                  "table:\n" + r.stdout)
            c.ok("remove", "cache-c")
            check(wait_for(lambda: status(c)[0] == 0), "repaired: exit 0")
            # A report that is not one (written by hand) is no process holding the ring.
            etcd.put(STATUS_DIR + "junk", "not json")
            code, doc, err = status(c)
            check(code == 3 and verdicts(doc).get("junk") == "lags", "an unreadable report: %d %s" % (code, doc))
            etcd.client().delete(STATUS_DIR + "junk")
            # A usage error is still 2, etcd away still 1.
            r = c.run("status", "--format", "csv")
            check(r.returncode == 2, "status --format csv: %d %s" % (r.returncode, r.stderr))
            for w in watchers:
                check(w.terminate() == 0, "%s: SIGTERM, exit 0" % w.name)
            code, doc, err = status(c)
            check(code == 4, "after the watchers stopped cleanly, nobody reports: %d %s" % (code, doc))
            url = etcd.url
        r = Chring(opts.chring, url).run("status", "--timeout", "2")
        check(r.returncode == 1 and r.stderr.startswith("chring: etcd: "), "etcd away: exit 1: %d %s" % (r.returncode, r.stderr))


def case_wait(opts):
    with reporting_run() as (tmp, watchers):
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "cache-a", "--weight", "1")
            # Nobody reports: nothing to wait for, said by exit 4.
            t0 = time.monotonic()
            r = c.run("add", "cache-b", "--weight", "1", "--wait")
            check(r.returncode == 4 and "nothing to wait for" in r.stdout and "added cache-b" in r.stdout,
                  "--wait with no process reporting: exit 4: %d %s %s" % (r.returncode, r.stdout, r.stderr))
            check(time.monotonic() - t0 < 30, "at once")

            # b has no plugins (no CHRING_PLUGIN_PATH): it refuses a hasher
            # that a and the admin load.
            plugins = {"CHRING_PLUGIN_PATH": opts.plugin_path} if opts.plugin_path else {}
            no_plugins = run_env()
            no_plugins.pop("CHRING_PLUGIN_PATH", None)
            c = Chring(opts.chring, etcd.url, env=plugins)
            a = ReportingWatcher(opts, etcd.url, tmp, "a", env=run_env(**plugins))
            b = ReportingWatcher(opts, etcd.url, tmp, "b", "--report-ttl", "60", env=no_plugins)
            watchers += [a, b]
            check(wait_for(lambda: holds_current(etcd, c, ["a", "b"])), "both report")
            r = c.run("add", "cache-c", "--weight", "2", "--wait")
            m = re.search(r"revision (\d+), fingerprint (0x[0-9a-f]{16})", r.stdout)
            check(r.returncode == 0 and m and "done in " in r.stdout and "all 2 processes hold revision" in r.stdout,
                  "add --wait: exit 0 once both hold it: %d %s %s" % (r.returncode, r.stdout, r.stderr))
            if m:
                rev, fp = int(m.group(1)), m.group(2)
                now = reports(etcd)
                check(all(now[k]["revision"] >= rev and now[k]["fingerprint"] == fp for k in ("a", "b")),
                      "when --wait returns, each report holds revision >= %d, fingerprint %s: %s" % (rev, fp, now))
            for args in (["set-weight", "cache-c", "3", "--wait=20"], ["remove", "cache-c", "--wait"],
                         ["set-weight", "cache-a", "1", "--wait"]):  # the last one writes nothing
                r = c.run(*args)
                check(r.returncode == 0 and "done in " in r.stdout, "%s: %d %s %s" % (args, r.returncode, r.stdout, r.stderr))
            ring = os.path.join(tmp, "apply.ring")
            with open(ring, "w") as f:
                f.write("cache-a 1\ncache-d 4\n")
            r = c.run("apply", ring, "--wait=30")
            check(r.returncode == 0 and "applied" in r.stdout and "done in " in r.stdout,
                  "apply --wait=30: %d %s %s" % (r.returncode, r.stdout, r.stderr))
            r = c.run("add", "x", "--weight", "1", "--wait=0")
            check(r.returncode == 2 and "out of range" in r.stderr, "--wait=0 is bad usage: " + r.stderr)

            # A stopped watcher: the wait times out naming it, exit 3.
            b.signal(signal.SIGSTOP)
            t0 = time.monotonic()
            r = c.run("add", "cache-e", "--weight", "1", "--wait=1.5")
            check(r.returncode == 3 and "timed out after" in r.stdout and re.search(r"^  b: holds revision \d+$", r.stdout, re.M)
                  and "1 of 2 processes hold" in r.stdout,
                  "--wait=1.5 with a stopped watcher: exit 3 naming it: %d %s %s" % (r.returncode, r.stdout, r.stderr))
            check(time.monotonic() - t0 < 20, "bounded by its timeout")
            b.signal(signal.SIGCONT)
            check(wait_for(lambda: holds_current(etcd, c, ["a", "b"])), "b catches up after SIGCONT")

            # A process whose lease expires is no longer waited for.
            gone = ReportingWatcher(opts, etcd.url, tmp, "gone", "--report-ttl", "2")
            watchers.append(gone)
            check(wait_for(lambda: holds_current(etcd, c, ["gone"])), "gone reports")
            gone.signal(signal.SIGSTOP)
            r = c.run("add", "cache-f", "--weight", "1", "--wait=30")
            check(r.returncode == 0 and "gone" in r.stdout and "all 2 processes hold" in r.stdout,
                  "a stopped process whose lease expired is not waited for: %d %s" % (r.returncode, r.stdout))
            gone.kill()

            # One process refuses the new ring: exit 3 at once, with its reason.
            if opts.plugin_path:
                admin = c
                with open(ring, "w") as f:
                    f.write("%%hasher murmur3_32\ncache-a 1\ncache-d 4\n")
                t0 = time.monotonic()
                r = admin.run("apply", ring, "--wait=60")
                check(r.returncode == 3 and "refused after" in r.stdout
                      and re.search(r"^  b: refused revision \d+: .*murmur3", r.stdout, re.M),
                      "a process refuses the new ring: exit 3 with its reason: %d %s %s"
                      % (r.returncode, r.stdout, r.stderr))
                check(time.monotonic() - t0 < 30, "without waiting for the timeout")
                with open(ring, "w") as f:
                    f.write("%%hasher xxh3\ncache-a 1\ncache-d 4\n")
                r = admin.run("apply", ring, "--wait")
                check(r.returncode == 0, "back to a ring b loads: %d %s" % (r.returncode, r.stdout))
            else:
                print("note: no --plugin-path: the refusal part is not run")


def case_confirm(opts):
    with reporting_run() as (tmp, watchers):
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "cache-a", "--weight", "1")
            ok_flag = os.path.join(tmp, "ok")
            confirmed = os.path.join(tmp, "confirmed")
            cmd = 'test -e %s && echo "$CHRING_REVISION $CHRING_FINGERPRINT $CHRING_FILE" >> %s' % (ok_flag, confirmed)
            w = ReportingWatcher(opts, etcd.url, tmp, "w", "--confirm", cmd)
            watchers.append(w)
            check(wait_for(lambda: (report_of(etcd, "w") or {}).get("state") == "unconfirmed"),
                  "a failing --confirm: unconfirmed: %s\n%s" % (report_of(etcd, "w"), w.log()))
            rep = report_of(etcd, "w") or {}
            held = w.held()
            check(rep.get("revision") is None and (rep.get("pending_revision"), rep.get("pending_fingerprint")) == held
                  and rep.get("failure") == "exited with status 1",
                  "nothing held yet; the file's ring pending, with the failure: %s (file %s)" % (rep, held))
            check("--confirm command exited with status 1 for revision %d" % held[0] in w.log(), "logged:\n" + w.log())
            code, doc, _ = status(c)
            check(code == 3 and verdicts(doc) == {"w": "lags"} and "unconfirmed" in doc["processes"][0]["detail"],
                  "status: an unconfirmed process lags: %d %s" % (code, doc))
            r = c.run("add", "cache-b", "--weight", "1", "--wait=1")
            check(r.returncode == 3 and "unconfirmed: --confirm command exited with status 1" in r.stdout,
                  "--wait times out on an unconfirmed ring: %d %s" % (r.returncode, r.stdout))
            tries = w.log().count("--confirm command exited")
            open(ok_flag, "w").close()
            check(wait_for(lambda: (report_of(etcd, "w") or {}).get("state") == "published"),
                  "once the command succeeds: published: %s" % report_of(etcd, "w"))
            rep = report_of(etcd, "w") or {}
            held = w.held()
            check((rep.get("revision"), rep.get("fingerprint")) == held and "pending_revision" not in rep,
                  "the confirmed ring is held: %s (file %s)" % (rep, held))
            lines = (read(confirmed) or "").split()
            check(lines[:3] == [str(held[0]), held[1], w.out], "--confirm's environment: %s" % lines)
            check(tries <= 2, "a failure is logged once per revision (%d lines)" % tries)
            check(status(c)[0] == 0, "status: exit 0")
            r = c.run("add", "cache-c", "--weight", "1", "--wait")
            check(r.returncode == 0, "--wait with a succeeding --confirm: %d %s" % (r.returncode, r.stdout))
            check("confirmed revision" in w.log(), "confirmations are logged")

            # Failing again; a newer revision replaces the one being confirmed.
            os.unlink(ok_flag)
            before = report_of(etcd, "w")
            c.ok("add", "cache-d", "--weight", "1")
            check(wait_for(lambda: (report_of(etcd, "w") or {}).get("state") == "unconfirmed"), "unconfirmed again")
            c.ok("add", "cache-e", "--weight", "1")
            last = json.loads(c.show("json"))
            check(wait_for(lambda: (report_of(etcd, "w") or {}).get("pending_fingerprint") == last["fingerprint"]),
                  "a newer revision replaces the pending one: %s" % report_of(etcd, "w"))
            rep = report_of(etcd, "w") or {}
            check(rep.get("revision") == before["revision"] and rep.get("fingerprint") == before["fingerprint"],
                  "the held ring is still the last confirmed one: %s, before %s" % (rep, before))
            open(ok_flag, "w").close()
            check(wait_for(lambda: holds_current(etcd, c, ["w"])), "confirmed: holds the current ring")
            check(w.terminate() == 0, "SIGTERM: exit 0")
            r = subprocess.run(watch_cmd(opts, etcd.url, os.path.join(tmp, "x"), "--once", "--confirm", "true"),
                               capture_output=True, text=True, env=run_env(), timeout=60)
            check(r.returncode == 2 and "not with --once" in r.stderr, "--confirm --once: %d %s" % (r.returncode, r.stderr))


# -- hooks --------------------------------------------------------------------------

def process_gone(pid):
    """No process `pid` runs (a zombie waiting for a reaper counts as gone)."""
    stat = read("/proc/%d/stat" % pid)
    return stat is None or stat[stat.rindex(")") + 2] in "ZX"


def group_gone(pgid):
    """No running process is in process group `pgid`."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = read("/proc/%s/stat" % entry)
        if stat is None:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            return False
    return True


def read_pid(path):
    text = read(path)
    return int(text.split()[0]) if text and text.strip() else None


def case_hook_timeout(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    leftovers = []
    try:
        out = os.path.join(tmp, "ring")
        log_path = os.path.join(tmp, "watch.log")
        hung, child, done, daemon = (os.path.join(tmp, n) for n in ("hung", "child", "done", "daemon"))
        # The first run hangs with a child of its own; a later one, on the
        # revision after `daemon` appears, leaves a process behind and exits 0.
        hook = ('if [ ! -e {hung} ]; then echo $$ > {hung}; sleep 1000 & echo $! > {child}; sleep 1000; wait; fi; '
                'if [ -e {daemon}.want ] && [ ! -e {daemon} ]; then sleep 300 > /dev/null 2>&1 & echo $! > {daemon}; fi; '
                'echo "$CHRING_REVISION" >> {done}').format(hung=hung, child=child, done=done, daemon=daemon)
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "a", "--weight", "1")
            first = etcd.client().revision()
            with open(log_path, "w") as err:
                watcher = subprocess.Popen(watch_cmd(opts, etcd.url, out, "--exec", hook, "--hook-timeout", "1",
                                                     "--keepalive", "1"), stderr=err, env=run_env())
            check(wait_for(lambda: read_pid(child) is not None), "the first hook started its child")
            leader, grandchild = read_pid(hung), read_pid(child)
            if grandchild:
                leftovers.append(grandchild)
            want = "--exec command killed after its 1 s timeout (process group %s) after revision %d; going on" % (
                leader, first)
            check(wait_for(lambda: want in (read(log_path) or "")), "the log says the hook was killed:\n%s\nin:\n%s"
                  % (want, read(log_path)))
            check(leader is not None and wait_for(lambda: process_gone(leader), timeout=10),
                  "the hook's shell is gone")
            check(grandchild is not None and wait_for(lambda: process_gone(grandchild), timeout=10),
                  "the hook's child is gone with it")
            check(leader is not None and wait_for(lambda: group_gone(leader), timeout=10),
                  "nothing of its process group runs")
            check(read(done) is None, "the killed hook did not go on")

            # The watch went on: the next revision is published and its hook runs to its end.
            c.ok("add", "b", "--weight", "1")
            second = etcd.client().revision()
            check(wait_for(lambda: file_field(read(out) or "", "revision") == str(second)),
                  "the next revision is published:\n" + (read(log_path) or ""))
            check(wait_for(lambda: str(second) in (read(done) or "").split()), "its hook ran to the end")
            check(read(out) == c.show(), "the file equals show --format ring-file")

            # A process a hook leaves on purpose (it exited 0 in time) is not killed.
            with open(daemon + ".want", "w"):
                pass
            c.ok("add", "c", "--weight", "1")
            third = etcd.client().revision()
            check(wait_for(lambda: str(third) in (read(done) or "").split()), "the third hook ran")
            left = read_pid(daemon)
            if left:
                leftovers.append(left)
            time.sleep(0.5)
            check(left is not None and not process_gone(left), "a process left by a hook that exited 0 runs on")

            code = sigterm(watcher)
            check(code == 0, "SIGTERM: exit 0 (got %s)" % code)
            log = read(log_path) or ""
            lines = [l for l in log.splitlines() if l]
            check(all(l.startswith("chring watch: ") for l in lines), "every log line is one 'chring watch:' line")
            check(log.count("--exec command") == 1, "one hook failure logged:\n" + log)
    finally:
        clean_up(watcher, None, tmp, leftovers)


def case_hook_stop(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    leftovers = []
    try:
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "a", "--weight", "1")
            rev = etcd.client().revision()
            # A hook that acts on SIGTERM, and one that ignores it (it and its children).
            for what, trap in (("a hook", ""), ("a hook ignoring SIGTERM", "trap '' TERM; ")):
                out = os.path.join(tmp, "ring")
                log_path = os.path.join(tmp, "watch.log")
                leader_file, child_file = os.path.join(tmp, "leader"), os.path.join(tmp, "child")
                for f in (out, leader_file, child_file):
                    if os.path.exists(f):
                        os.unlink(f)
                hook = '%secho $$ > %s; sleep 1000 & echo $! > %s; sleep 1000; wait' % (trap, leader_file, child_file)
                with open(log_path, "w") as err:
                    watcher = subprocess.Popen(watch_cmd(opts, etcd.url, out, "--exec", hook), stderr=err,
                                               env=run_env())
                check(wait_for(lambda: read_pid(child_file) is not None), "%s: the hook started its child" % what)
                leader, child = read_pid(leader_file), read_pid(child_file)
                leftovers += [p for p in (leader, child) if p]
                code = sigterm(watcher, timeout=30)
                check(code == 0, "%s: SIGTERM during the hook: exit 0 (got %s)" % (what, code))
                check(leader is not None and wait_for(lambda: process_gone(leader), timeout=10),
                      "%s: the hook's shell is gone" % what)
                check(child is not None and wait_for(lambda: process_gone(child), timeout=10),
                      "%s: the hook's child is gone" % what)
                check(leader is not None and wait_for(lambda: group_gone(leader), timeout=10),
                      "%s: nothing of its process group runs" % what)
                log = read(log_path) or ""
                check(("--exec command ended when the watcher stopped (process group %s) after revision %d"
                       % (leader, rev)) in log and "stopping on SIGTERM" in log,
                      "%s: the log says so:\n%s" % (what, log))
                watcher = None
    finally:
        clean_up(watcher, None, tmp, leftovers)


# -- bounded messages -----------------------------------------------------------------

LINE_MAX = 1000  # a log line or message that quotes a huge key, id or value stays under this


def case_bounded(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    big = 2 << 20
    try:
        out = os.path.join(tmp, "ring")
        log_path = os.path.join(tmp, "watch.log")
        # etcd refuses requests over 1.5 MiB by default.
        with EtcdServer(extra_args=("--max-request-bytes", str(8 << 20))) as etcd:
            c = Chring(opts.chring, etcd.url)
            c.ok("add", "a", "--weight", "1")
            good = etcd.client().revision()
            with open(log_path, "w") as err:
                watcher = subprocess.Popen(watch_cmd(opts, etcd.url, out, "--keepalive", "1"), stderr=err,
                                           env=run_env())
            check(wait_for(lambda: file_field(read(out) or "", "revision") == str(good)), "the first file")
            kv = etcd.client(timeout=60)
            huge_id = PREFIX + "/members/" + "i" * big
            huge_value = PREFIX + "/members/v"
            outside = PREFIX + "/" + "k" * big
            states = [
                # (what, puts, deletes, a text the refusal has)
                ("a 2 MiB id", [(huge_id, "1")], [],
                 PREFIX + "/members/" + "i" * 128 + "... (%d bytes): " % big),
                ("a 2 MiB value", [(huge_value, "1 " + "z" * big)], [huge_id],
                 PREFIX + "/members/v: "),
                ("a 2 MiB key outside the layout", [(outside, "1")], [huge_value],
                 PREFIX + "/" + "k" * 128 + "... (%d bytes): neither a member" % big),
            ]
            for what, puts, deletes, want in states:
                ops = [kv.op_put(k, v) for k, v in puts] + [kv.op_delete(k) for k in deletes]
                _, rev = kv.txn(ops)
                check(wait_for(lambda: "refused revision %d" % rev in (read(log_path) or "")),
                      "%s: refused" % what)
                lines = [l for l in (read(log_path) or "").splitlines() if "refused revision %d" % rev in l]
                check(len(lines) == 1 and want in lines[0] and len(lines[0]) < LINE_MAX,
                      "%s: one bounded line with %r: %r" % (what, want, [l[:300] + "..." for l in lines]))
                # chring etcd says the same, as briefly.
                for args in (["show"], ["add", "b", "--weight", "1"]):
                    r = c.run(*args)
                    check(r.returncode == 1 and want in r.stderr and len(r.stderr) < LINE_MAX,
                          "%s: chring etcd %s: %d %r" % (what, args[0], r.returncode, r.stderr[:300]))
            kv.delete(outside)
            code = sigterm(watcher)
            check(code == 0, "SIGTERM: exit 0 (got %s)" % code)
            long_lines = [len(l) for l in (read(log_path) or "").splitlines() if len(l) >= LINE_MAX]
            check(not long_lines, "every log line is under %d characters: %s" % (LINE_MAX, long_lines))

            # A huge argument (as long as one argument may be) is quoted bounded too.
            arg, zone = "x" * 100000, "#" + "z" * 60000  # the zone's line is under the line limit
            for args, message in ((["add", arg, "--weight", "1"], "add " + "x" * 64 + "... (100000 bytes): "),
                                  (["remove", arg], "'" + "x" * 64 + "...' (100000 bytes): "),
                                  (["add", "b", "--weight", "1", "--zone", zone],
                                   "the zone '#" + "z" * 63 + "...' (60001 bytes) is read as no zone in the member "
                                   "line 'b 1 #" + "z" * 59 + "...' (60005 bytes)")):
                r = c.run(*args)
                check(r.returncode == 1 and message in r.stderr and len(r.stderr) < LINE_MAX,
                      "chring etcd %s with a 100000-byte argument: %d %r" % (args[0], r.returncode, r.stderr[:300]))
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        shutil.rmtree(tmp, ignore_errors=True)


# -- options without a trailing newline ----------------------------------------------

def case_options_newline(opts):
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    try:
        ring = os.path.join(tmp, "ring")
        members = os.path.join(tmp, "members")
        with open(members, "w") as f:
            f.write("m 1\nn 2\n")
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            shown = {}
            values = (("with", "%%placement native\n%%seed 7\n"), ("without", "%%placement native\n%%seed 7"),
                      ("CRLF, without", "%%placement native\r\n%%seed 7"), ("one line, without", "%%seed 7"))
            for what, value in values:
                etcd.client().delete_prefix(PREFIX + "/")
                etcd.put(PREFIX + "/options", value)  # etcdctl, as docs/etcd.md shows
                out = c.ok("apply", members)
                check("2 added, 0 removed, 0 changed, options unchanged" in out,
                      "apply keeps an options value %s a trailing newline: %s" % (what, out))
                shown[what] = c.show()
                check("%%seed 7\n" in shown[what] and "\nm 1\nn 2\n" in shown[what],
                      "show, options %s a trailing newline:\n%s" % (what, shown[what]))
                r = subprocess.run(watch_cmd(opts, etcd.url, ring, "--once"), capture_output=True, text=True,
                                   env=run_env(), timeout=60)
                check(r.returncode == 0 and read(ring) == shown[what], "watch --once, options %s a trailing "
                      "newline: %d %s" % (what, r.returncode, r.stderr))
            prints = {w: file_field(t, "fingerprint") for w, t in shown.items()}
            check(len(set(prints.values())) == 1, "one ring whatever the value's last line ends with: %s" % prints)
            # No options key: apply reads the members with the defaults.
            etcd.client().delete_prefix(PREFIX + "/")
            out = c.ok("apply", members)
            check("2 added" in out and "%%seed 0\n" in c.show(), "apply without an options key: " + out)
            # A compatibility placement (its hasher a plugin) without the final newline.
            etcd.client().delete_prefix(PREFIX + "/")
            etcd.put(PREFIX + "/options", "%%placement ketama")
            out = c.ok("apply", members)
            check("2 added" in out and "options unchanged" in out and "%%placement ketama\n" in c.show(),
                  "apply under ketama options without a final newline: " + out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)



HEALTH_DIR = PREFIX + "/health/"


class Listener:
    """A TCP listener on 127.0.0.1 that accepts and closes every connection
    (a full backlog would make connects hang); close() and open() again on
    the same port."""

    def __init__(self, port=0):
        self.port = port
        self.sock = None
        self.open()

    def open(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.port = s.getsockname()[1]
        self.sock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while True:
            try:
                conn, _ = s.accept()
            except OSError:
                return
            conn.close()

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    @property
    def id(self):
        return "127.0.0.1:%d" % self.port


def health_reports(etcd, prefix=PREFIX):
    kv = etcd.client()
    try:
        kvs, _ = kv.get_prefix(prefix + "/health/")
    finally:
        kv.close()
    return {k[len(prefix + "/health/"):].decode(): json.loads(v) for k, v in kvs.items()}


def down_of(etcd, name, prefix=PREFIX):
    """The checker's "down" list, None while it has no key."""
    rep = health_reports(etcd, prefix).get(name)
    return None if rep is None else rep.get("down")


def health_cmd(opts, url, name, *extra, prefix=PREFIX):
    return [opts.chring, "health", "--etcd", url, "--prefix", prefix, "--name", name,
            "--interval", "0.2", "--probe-timeout", "0.5", "--fall", "2", "--rise", "2",
            "--report-ttl", "2"] + list(extra)


def case_health(opts):
    """chring health: three TCP listeners as members; the report follows a
    listener closed and reopened after --fall and --rise probes; --http with
    200 then 503; --once; kill -9 leaves the key to its lease, SIGTERM
    revokes it; build_ring accepts PREFIX/health/ and still refuses a typo."""
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    procs = []

    def start(name, *extra, prefix=PREFIX):
        log = open(os.path.join(tmp, name + ".log"), "w")
        p = subprocess.Popen(health_cmd(opts, etcd.url, name, *extra, prefix=prefix), stdout=log, stderr=log,
                             env=run_env())
        procs.append(p)
        return p

    def log_of(name):
        return read(os.path.join(tmp, name + ".log")) or ""

    try:
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            listeners = [Listener() for _ in range(3)]
            for lst in listeners:
                c.ok("add", lst.id, "--weight", "1")
            a, b, _ = listeners

            p1 = start("checker-1")
            check(wait_for(lambda: down_of(etcd, "checker-1") == []),
                  "the report lists none down: %s\n%s" % (health_reports(etcd), log_of("checker-1")))
            rep = health_reports(etcd).get("checker-1") or {}
            check(rep.get("checker") == "checker-1" and rep.get("pid") == p1.pid and rep.get("host")
                  and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", rep.get("updated", "")),
                  "the report's fields: %s" % rep)
            # A plain keepalive writes nothing: the value stays the same.
            time.sleep(1.5)
            check(health_reports(etcd).get("checker-1") == rep,
                  "no write without a transition: %s, then %s" % (rep, health_reports(etcd).get("checker-1")))

            r = c.run("show")
            check(r.returncode == 0, "chring etcd show with a key under PREFIX/health/: %s" % r.stderr.strip())

            b.close()
            check(wait_for(lambda: down_of(etcd, "checker-1") == [b.id]),
                  "a closed listener is listed down: %s\n%s" % (health_reports(etcd), log_of("checker-1")))
            line = "chring health: %s is down (2 failed probes: connect: Connection refused)" % b.id
            check(line in log_of("checker-1"), "the log says %r:\n%s" % (line, log_of("checker-1")))

            r = subprocess.run(health_cmd(opts, etcd.url, "once-1", "--once"), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 3 and (b.id + " down (connect: Connection refused)") in r.stdout
                  and (a.id + " up") in r.stdout,
                  "--once with a member down: exit 3, each member's state: %d %r %r"
                  % (r.returncode, r.stdout, r.stderr))
            check("once-1" not in health_reports(etcd), "--once writes nothing: %s" % health_reports(etcd))

            b.open()
            check(wait_for(lambda: down_of(etcd, "checker-1") == []),
                  "a reopened listener is up again: %s\n%s" % (health_reports(etcd), log_of("checker-1")))
            check("%s is up (2 successful probes)" % b.id in log_of("checker-1"),
                  "the log says it is up:\n%s" % log_of("checker-1"))
            r = subprocess.run(health_cmd(opts, etcd.url, "once-2", "--once"), capture_output=True, text=True,
                               env=run_env(), timeout=60)
            check(r.returncode == 0 and r.stdout.count(" up\n") == 3,
                  "--once with every member up: exit 0: %d %r %r" % (r.returncode, r.stdout, r.stderr))

            # The ring accepts keys under PREFIX/health/, refuses a typo.
            etcd.put(PREFIX + "/health/x", "{}")
            r = c.run("show")
            check(r.returncode == 0, "show with PREFIX/health/x: %s" % r.stderr.strip())
            etcd.put(PREFIX + "/healt/x", "{}")
            r = c.run("show")
            check(r.returncode != 0 and "/healt/x: neither a member" in r.stderr,
                  "show refuses PREFIX/healt/x: %d %s" % (r.returncode, r.stderr.strip()))
            kv = etcd.client()
            kv.delete(PREFIX + "/healt/x")
            kv.delete(PREFIX + "/health/x")
            kv.close()

            # kill -9: the key stays until its lease expires (2 s).
            p1.kill()
            p1.wait()
            check(down_of(etcd, "checker-1") == [], "the key outlives a killed checker for a while")
            check(wait_for(lambda: down_of(etcd, "checker-1") is None, timeout=10),
                  "the key of a killed checker goes with its lease: %s" % health_reports(etcd))

            # SIGTERM: exit 0, the key gone at once.
            p2 = start("checker-2")
            check(wait_for(lambda: down_of(etcd, "checker-2") == []), "checker-2 reports: %s\n%s"
                  % (health_reports(etcd), log_of("checker-2")))
            code = sigterm(p2)
            check(code == 0, "SIGTERM: exit 0, not %s\n%s" % (code, log_of("checker-2")))
            check(down_of(etcd, "checker-2") is None, "SIGTERM: the key is gone at once: %s" % health_reports(etcd))

            # --http: 200 is up, 503 (after --fall probes) down, 200 again up.
            http_prefix = "/chring/http"
            state = {"status": 200}

            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    code = state["status"] if self.path == "/health" else 404
                    self.send_response(code)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

                def log_message(self, *args):
                    pass

            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            web = "127.0.0.1:%d" % server.server_address[1]
            c.ok("add", web, "--weight", "1", prefix=http_prefix)
            start("http-1", "--http", "/health", prefix=http_prefix)
            check(wait_for(lambda: down_of(etcd, "http-1", http_prefix) == []),
                  "--http: 200 is up: %s\n%s" % (health_reports(etcd, http_prefix), log_of("http-1")))
            time.sleep(0.5)
            check(down_of(etcd, "http-1", http_prefix) == [], "--http: still up after a few probes")
            state["status"] = 503
            check(wait_for(lambda: down_of(etcd, "http-1", http_prefix) == [web]),
                  "--http: 503 is down: %s\n%s" % (health_reports(etcd, http_prefix), log_of("http-1")))
            check("HTTP 503, expected 200" in log_of("http-1"), "--http: the log says 503:\n%s" % log_of("http-1"))
            state["status"] = 200
            check(wait_for(lambda: down_of(etcd, "http-1", http_prefix) == []),
                  "--http: 200 again is up: %s\n%s" % (health_reports(etcd, http_prefix), log_of("http-1")))
            server.shutdown()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)

# -- availability --------------------------------------------------------------

DOWN_DIR = PREFIX + "/down/"
HEALTH_DIR = PREFIX + "/health/"


def b64(text):
    return base64.b64encode(text.encode()).decode()


def leased_put(etcd, key, value, ttl):
    """Puts key under a new lease of `ttl` seconds; the revision after it."""
    kv = etcd.client()
    try:
        lease = kv.call("/v3/lease/grant", {"TTL": ttl})["ID"]
        answer = kv.call("/v3/kv/put", {"key": b64(key), "value": b64(value), "lease": lease})
        return int(answer["header"]["revision"])
    finally:
        kv.close()


def checker_put(etcd, name, down, ttl=60):
    """A checker's key as chring health writes it, under its own lease."""
    value = json.dumps({"checker": name, "host": "test", "pid": 1, "down": down,
                        "updated": "2026-12-07T00:00:00.000Z"})
    return leased_put(etcd, HEALTH_DIR + name, value, ttl)


def keys_under(etcd, prefix):
    kv = etcd.client()
    try:
        kvs, _ = kv.get_prefix(prefix)
    finally:
        kv.close()
    return {k.decode(): v.decode() for k, v in kvs.items()}


def revision_of(etcd):
    kv = etcd.client()
    try:
        return kv.revision()
    finally:
        kv.close()


def down_lines(text):
    """The ids of a ring file's %%down lines."""
    return re.findall(r"^%%down (\S+)$", text or "", re.M)


def without_revision(text):
    return re.sub(r"^%%revision \S+\n", "", text or "", flags=re.M)


def probe_availability(opts, path):
    """The C library's reading of a ring file: {"digest", "panic", "threshold", "down"}."""
    r = subprocess.run([opts.probe, "availability", path], capture_output=True, text=True, timeout=60)
    m = re.fullmatch(r"digest (0x[0-9a-f]{16}) panic (\d+) threshold (\d+) down(.*)\n", r.stdout)
    if r.returncode != 0 or not m:
        return {"error": r.stdout + r.stderr}
    return {"digest": m.group(1), "panic": int(m.group(2)), "threshold": int(m.group(3)),
            "down": m.group(4).split()}


def case_down(opts):
    """chring etcd down/up/panic-threshold: an unknown member refused, --dry-run
    writes nothing, a mark under --for expires with its lease, --hold's mark
    goes on SIGTERM, up removes a mark (and says when there is none), the
    panic threshold's key and the panic it causes, malformed availability
    keys refused with the key named, a mark on a non-member ignored."""
    with EtcdServer() as etcd:
        c = Chring(opts.chring, etcd.url)
        for m in ("a", "b", "c", "d"):
            c.ok("add", m, "--weight", "1")

        before = revision_of(etcd)
        r = c.run("down", "zz")
        check(r.returncode == 1 and "'zz' is not a member" in r.stderr,
              "down of a non-member: refused: %d %r" % (r.returncode, r.stderr))
        r = c.run("--dry-run", "down", "b")
        check(r.returncode == 0 and "b's keys (" in r.stdout and "go to their next replicas" in r.stdout
              and "dry run: nothing written" in r.stdout,
              "down --dry-run says what the mark does: %d %r %r" % (r.returncode, r.stdout, r.stderr))
        check(revision_of(etcd) == before and keys_under(etcd, DOWN_DIR) == {},
              "a refused down and a dry run write nothing")

        # --for: the mark lives with its lease.
        r = c.run("down", "b", "--for", "2s", "--reason", "disk swap")
        check(r.returncode == 0 and "marked b down for 2s" in r.stdout,
              "down --for 2s: %d %r %r" % (r.returncode, r.stdout, r.stderr))
        marks = keys_under(etcd, DOWN_DIR)
        check(list(marks) == [DOWN_DIR + "b"] and "disk swap" in marks.get(DOWN_DIR + "b", ""),
              "the mark's key and its note: %s" % marks)
        check(down_lines(c.show()) == ["b"], "show's ring file has %%down b")
        check(wait_for(lambda: keys_under(etcd, DOWN_DIR) == {}, timeout=20),
              "the mark goes when its lease expires: %s" % keys_under(etcd, DOWN_DIR))
        check(down_lines(c.show()) == [], "no %%down line once the mark expired")
        r = c.run("down", "b", "--for", "soon")
        check(r.returncode == 2 and "--for" in r.stderr, "a malformed --for is bad usage: %d %r"
              % (r.returncode, r.stderr))

        # --hold: the mark lives while the command runs.
        env = run_env()
        hold = subprocess.Popen([opts.chring, "etcd", "--etcd", etcd.url, "--prefix", PREFIX, "down", "c", "--hold"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            check(wait_for(lambda: DOWN_DIR + "c" in keys_under(etcd, DOWN_DIR)), "down --hold writes the mark")
            hold.send_signal(signal.SIGTERM)
            out, err = hold.communicate(timeout=30)
            check(hold.returncode == 0 and "revoked the lease" in out,
                  "down --hold: SIGTERM revokes the mark, exit 0: %d %r %r" % (hold.returncode, out, err))
            check(keys_under(etcd, DOWN_DIR) == {}, "the held mark is gone at once: %s" % keys_under(etcd, DOWN_DIR))
        finally:
            if hold.poll() is None:
                hold.kill()
                hold.wait()

        # up
        r = c.run("up", "d")
        check(r.returncode == 0 and "d has no operator's mark: nothing written" in r.stdout,
              "up without a mark: %d %r %r" % (r.returncode, r.stdout, r.stderr))
        r = c.run("up", "zz")
        check(r.returncode == 1 and "neither a member" in r.stderr, "up of an unknown id: %r" % r.stderr)
        c.ok("down", "d")
        r = c.run("up", "d")
        check(r.returncode == 0 and "come back to it" in r.stdout and keys_under(etcd, DOWN_DIR) == {},
              "up removes the mark: %d %r %r" % (r.returncode, r.stdout, r.stderr))

        # The panic threshold: 2 of 4 equal members down is honoured, 3 is panic.
        c.ok("down", "a")
        out = c.ok("down", "b")
        check("panic" not in out, "2 of 4 down: no panic: %r" % out)
        out = c.ok("down", "c")
        check("the ring enters panic: 3 of 4 members' weight down (75% > 50%)" in out,
              "the third mark says the ring enters panic: %r" % out)
        out = c.ok("panic-threshold")
        check(out.startswith("panic threshold 50% (default)") and "panic, marks ignored" in out,
              "panic-threshold prints the threshold and the panic: %r" % out)
        out = c.ok("panic-threshold", "80")
        check("the ring leaves panic" in out and keys_under(etcd, PREFIX + "/panic-threshold") ==
              {PREFIX + "/panic-threshold": "80"}, "panic-threshold 80: %r" % out)
        text = c.show()
        check(down_lines(text) == ["a", "b", "c"] and file_field(text, "panic-threshold") == "80",
              "the ring file carries the marks and the threshold:\n%s" % text)
        r = c.run("panic-threshold", "101")
        check(r.returncode == 2, "a threshold over 100 is bad usage: %d" % r.returncode)
        for m in ("a", "b", "c"):
            c.ok("up", m)

        # Malformed availability keys make the state invalid, the key named.
        for key, value, reason in ((PREFIX + "/panic-threshold", "lots", "is not a whole percent 0..100"),
                                   (DOWN_DIR + "a%2", "x", DOWN_DIR + "a%2"),
                                   (DOWN_DIR + "a", "two\nlines", "raw control byte 0x0A")):
            kv = etcd.client()
            old = kv.get_prefix(key)[0].get(key.encode())
            kv.put(key, value)
            r = c.run("show")
            check(r.returncode == 1 and reason in r.stderr, "%s = %r refused: %d %r" % (key, value, r.returncode, r.stderr))
            if old is None:
                kv.delete(key)
            else:
                kv.put(key, old)
            kv.close()
        c.ok("show")

        # A mark on a non-member (a member removed while marked) is ignored.
        etcd.put(DOWN_DIR + "zz", "left over")
        text = c.show()
        check(down_lines(text) == [], "a mark on a non-member changes nothing:\n%s" % text)
        code, doc, err = status(c)
        notes = json.dumps(doc)
        check(doc is not None and doc.get("availability", {}).get("down") == "none",
              "status: nothing down: %s %s" % (doc, err))
        check("zz" in (c.run("status").stdout), "status names the ignored mark")
        check(code == 4 and "ignored" in c.run("status").stdout, "status says the mark is ignored: %d %s" % (code, notes))


def case_quorum(opts):
    """The checkers' quorum, as chring watch publishes it: 1 of 3 checkers is
    not enough, 2 of 3 is; a checker's key deleted or its lease expired is
    recomputed; a malformed view is ignored and logged. The file's %%down
    lines and %%availability are the library's own (ringfile_probe)."""
    tmp = tempfile.mkdtemp(prefix="chring-etcd-test-")
    watcher = None
    try:
        with EtcdServer() as etcd:
            c = Chring(opts.chring, etcd.url)
            for m in ("a", "b", "c"):
                c.ok("add", m, "--weight", "1")
            out = os.path.join(tmp, "ring")
            watcher = LoggedWatcher(watch_cmd(opts, etcd.url, out), os.path.join(tmp, "watch.log"))

            def settles():
                """The file is the state etcd holds now, revision aside."""
                return wait_for(lambda: without_revision(read(out)) == without_revision(c.show()))

            check(settles(), "the first file:\n%s" % watcher.log())
            checker_put(etcd, "k1", ["b"])
            checker_put(etcd, "k2", [])
            checker_put(etcd, "k3", [])
            check(settles() and down_lines(read(out)) == [], "1 of 3 checkers: b is not down:\n%s" % read(out))
            checker_put(etcd, "k2", ["b"])
            check(wait_for(lambda: down_lines(read(out)) == ["b"]), "2 of 3 checkers: b is down:\n%s\n%s"
                  % (read(out), watcher.log()))
            text = read(out)
            probe = probe_availability(opts, out)
            check(probe.get("down") == ["b"] and probe.get("digest") == file_field(text, "availability"),
                  "the library reads the file's mark and digest: %s\n%s" % (probe, text))
            check(("chring watch: down now: b (digest %s" % probe.get("digest")) in watcher.log(),
                  "the watcher logs the new down set:\n%s" % watcher.log())

            kv = etcd.client()
            kv.delete(HEALTH_DIR + "k1")
            kv.close()
            check(wait_for(lambda: down_lines(read(out)) == []), "k1 gone: 1 of 2: b is up again:\n%s" % read(out))
            check("chring watch: down now: none" in watcher.log(), "the log says none is down:\n%s" % watcher.log())

            checker_put(etcd, "k1", ["b"], ttl=2)
            check(wait_for(lambda: down_lines(read(out)) == ["b"]), "k1 back: 2 of 3: b is down")
            check(wait_for(lambda: down_lines(read(out)) == [], timeout=20),
                  "k1's lease expired: 1 of 2: b is up:\n%s" % read(out))

            # A view that does not read neither votes nor counts, and is logged.
            etcd.put(HEALTH_DIR + "k4", "not json")
            check(settles(), "a malformed view leaves the state valid")
            check(watcher.wait_log("ignoring the health report " + HEALTH_DIR + "k4: not a JSON object"),
                  "the watcher logs the ignored view:\n%s" % watcher.log())
            checker_put(etcd, "k3", ["b"])
            check(wait_for(lambda: down_lines(read(out)) == ["b"]), "k2 and k3 of 3 readable views: b down")
            watcher.stop()
            check(watcher.proc.returncode == 0, "the watcher exits 0")
    finally:
        clean_up(watcher.proc if watcher else None, None, tmp)


def case_avail_watch(opts):
    """A checker's write that changes no quorum is not published again (the
    file's bytes and mtime stay; the report's seen_revision moves); a
    change of the down set is; down/up --wait wait for the availability
    digest; status shows the down set with why, the checkers and agreement."""
    with reporting_run() as (tmp, watchers), EtcdServer() as etcd:
        c = Chring(opts.chring, etcd.url)
        for m in ("a", "b", "c", "d"):
            c.ok("add", m, "--weight", "1")
        w = ReportingWatcher(opts, etcd.url, tmp, "w1")
        watchers.append(w)
        check(wait_for(lambda: holds_current(etcd, c, ["w1"])), "w1 holds the ring:\n%s" % w.log())
        text, mtime = read(w.out), os.stat(w.out).st_mtime_ns
        rev = checker_put(etcd, "k1", [])
        check(wait_for(lambda: (report_of(etcd, "w1") or {}).get("seen_revision", 0) >= rev),
              "the report says revision %d was seen: %s" % (rev, report_of(etcd, "w1")))
        check(read(w.out) == text and os.stat(w.out).st_mtime_ns == mtime,
              "a checker's write that changes nothing leaves the file as it is")
        check(w.log().count("published revision") == 1, "published once:\n%s" % w.log())

        checker_put(etcd, "k1", ["c"])
        check(wait_for(lambda: down_lines(read(w.out)) == ["c"]), "1 of 1 checker: c is down:\n%s" % w.log())
        r = c.run("down", "b", "--reason", "test", "--wait=30")
        check(r.returncode == 0 and "done in" in r.stdout,
              "down --wait: %d %r %r" % (r.returncode, r.stdout, r.stderr))
        check(down_lines(read(w.out)) == ["b", "c"], "the file has both:\n%s" % read(w.out))
        rep = report_of(etcd, "w1")
        check(rep.get("availability") == file_field(read(w.out), "availability") and rep.get("panic") is False
              and rep.get("seen_revision", 0) >= rep.get("revision", 1),
              "the report's digest is the file's: %s" % rep)

        code, doc, err = status(c)
        av = (doc or {}).get("availability", {})
        why = {d["id"]: d["why"] for d in (doc or {}).get("down", [])}
        check(code == 0 and av.get("down") == "b, c" and av.get("digest") == rep.get("availability")
              and (doc or {}).get("summary", {}).get("availability_agree") == 1,
              "status: down b, c, every process agrees: %d %s %s" % (code, doc, err))
        check(why.get("c") == "checkers 1/1" and why.get("b", "").startswith("operator mark (chring etcd down on ")
              and why["b"].endswith(": test)"), "status says why: %s" % why)
        checkers = (doc or {}).get("checkers", [])
        check([ch.get("name") for ch in checkers] == ["k1"] and checkers[0].get("down") == "c",
              "status lists the checker's view: %s" % checkers)
        text = c.run("status").stdout
        check("every process holds availability digest" in text and "mark expires in" in text,
              "status in a table:\n%s" % text)

        r = c.run("up", "b", "--wait=30")
        check(r.returncode == 0 and "done in" in r.stdout, "up --wait: %d %r %r" % (r.returncode, r.stdout, r.stderr))
        check(down_lines(read(w.out)) == ["c"], "b up again:\n%s" % read(w.out))
        check(w.terminate() == 0, "w1 exits 0")


CASES = {"admin": case_admin, "conflict": case_conflict, "once": case_once, "follow": case_follow,
         "catchup": case_catchup, "tls": case_tls, "token": case_token, "guard": case_guard,
         "hook-timeout": case_hook_timeout, "hook-stop": case_hook_stop, "bounded": case_bounded,
         "options-newline": case_options_newline, "report": case_report, "status": case_status,
         "wait": case_wait, "confirm": case_confirm, "health": case_health, "down": case_down,
         "quorum": case_quorum, "avail-watch": case_avail_watch}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--chring", required=True)
    p.add_argument("--plugin-path", default=os.environ.get("CHRING_PLUGIN_PATH", ""),
                   help="the build's plugin folders (a watcher without them refuses a plugin's hasher)")
    p.add_argument("--probe", help="ringfile_probe: the C library's reading of a ring file (availability cases)")
    p.add_argument("case", choices=sorted(CASES))
    opts = p.parse_args()
    if opts.case in ("tls", "token") and shutil.which("openssl") is None:
        print("SKIP: openssl not found (it makes the test's certificates)")
        return 77
    try:
        CASES[opts.case](opts)
    except Exception as e:  # an unexpected error is a failure, reported as such
        failures.append("%s: %s: %s" % (opts.case, type(e).__name__, e))
        print("FAIL: " + failures[-1], flush=True)
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
