"""A real etcd on loopback for the chring tests, and a small v3 client.

    with EtcdServer() as etcd:          # random free ports, temporary data dir
        kv = etcd.client()
        rev = kv.put("/ring/members/a", "1")
        etcd.kill(); etcd.start()       # SIGKILL, then restart on the same data dir
        etcd.snapshot_save(path); ...; etcd.snapshot_restore(path)

EtcdServer runs Debian's `etcd` (3.4) as a single-member cluster in its own
process group, its log in the data directory's parent, and stops it
whatever happens (`with`, or stop() in a finally). The client speaks etcd's
v3 API through the JSON gateway that every etcd serves on its client port
(POST /v3/kv/range, put, deleterange, txn, compaction), over one keep-alive
HTTP connection: Python's standard library only, no gRPC stack.
`etcdctl` (snapshots, raw puts by hand) runs with ETCDCTL_API=3.

    pki = make_test_pki(directory)      # a CA, etcd's and clients' certificates
    with EtcdServer(tls=pki) as etcd:   # https, --client-cert-auth
        etcd.enable_auth("root-password")   # root user, auth enable
        kv = etcd.client(user=("root", "root-password"))

With `tls`, etcd serves https with the test CA's certificate and asks
every client for a certificate of that CA; the client and etcdctl present
pki["client"]. With authentication on, etcdctl runs as root and the client
as the user it was given, authenticating again when etcd calls its token
invalid (a short --auth-token-ttl).
"""

import base64
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

ETCD = os.environ.get("CHRING_ETCD", "etcd")
ETCDCTL = os.environ.get("CHRING_ETCDCTL", "etcdctl")


def free_ports(count):
    """`count` distinct loopback ports that were free a moment ago (all
    bound at once, so they differ)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def signal_group(process, sig):
    """`sig` to the process group of `process` (started with
    start_new_session=True); nothing if it is gone."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def end_group(process, timeout=10.0, sig=signal.SIGTERM):
    """Ends `process` and its group: `sig` (with SIGCONT, which a stopped
    process needs to act on it), then SIGKILL if it is still there after
    `timeout` seconds. Waits for it."""
    if process.poll() is None:
        signal_group(process, sig)
        if sig != signal.SIGKILL:
            signal_group(process, signal.SIGCONT)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        process.wait(timeout=10)


def available():
    """None when etcd and etcdctl can run here, else why not."""
    for prog in (ETCD, ETCDCTL):
        if shutil.which(prog) is None:
            return "%s not found" % prog
    return None


def make_test_pki(directory):
    """Certificates made with openssl in `directory` (EC P-256, valid 2
    days): {"ca", "other_ca": PEM files; "server", "client", "client_cn",
    "rogue": (cert, key)}. The server's is for 127.0.0.1 and localhost and
    also for client authentication (etcd's JSON gateway dials etcd with
    it); "client" has no Common Name (etcd's gateway refuses one that has,
    under --client-cert-auth), "client_cn" has one, "rogue" is signed by
    other_ca. Raises RuntimeError with openssl's words on a failure."""
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    with open(path("ext.cnf"), "w") as f:
        f.write("[server]\nsubjectAltName = IP:127.0.0.1, DNS:localhost\n"
                "extendedKeyUsage = serverAuth, clientAuth\n"
                "[client]\nextendedKeyUsage = clientAuth\n")

    def openssl(*args):
        r = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        if r.returncode != 0:
            raise RuntimeError("openssl %s: %s" % (" ".join(args), r.stdout.decode(errors="replace")))

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other_ca"):
        openssl("req", "-x509", *ec, "-keyout", path(ca + ".key"), "-out", path(ca + ".pem"),
                "-days", "2", "-subj", "/CN=chring test " + ca)
    pki = {"ca": path("ca.pem"), "other_ca": path("other_ca.pem")}
    for name, subject, ca, ext in (("server", "/CN=chring test etcd", "ca", "server"),
                                   ("client", "/O=chring test client", "ca", "client"),
                                   ("client_cn", "/CN=watcher", "ca", "client"),
                                   ("rogue", "/O=chring test rogue", "other_ca", "client")):
        openssl("req", *ec, "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", subject)
        openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"),
                "-CAkey", path(ca + ".key"), "-CAcreateserial", "-out", path(name + ".pem"),
                "-days", "2", "-extfile", path("ext.cnf"), "-extensions", ext)
        pki[name] = (path(name + ".pem"), path(name + ".key"))
    return pki


def _b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


def _unb64(text):
    return base64.b64decode(text) if text else b""


def prefix_end(prefix):
    """The range end that selects every key starting with `prefix` (bytes)."""
    if isinstance(prefix, str):
        prefix = prefix.encode()
    p = bytearray(prefix)
    while p:
        if p[-1] < 0xFF:
            p[-1] += 1
            return bytes(p)
        p.pop()
    return b"\0"  # every key


class EtcdError(RuntimeError):
    """etcd answered with an error (HTTP status and etcd's message)."""

    def __init__(self, status, body):
        self.status = status
        self.body = body
        try:
            self.message = json.loads(body).get("error") or body
        except ValueError:
            self.message = body
        super().__init__("etcd: HTTP %d: %s" % (status, self.message))


class EtcdClient:
    """etcd's v3 KV API through the JSON gateway, one keep-alive connection.

    Keys and values are str (UTF-8) or bytes. Every call returns the
    revision of the store after it (the header's revision). Not thread-safe:
    one client per thread. A failed call raises one of `errors`.
    """

    errors = (OSError, http.client.HTTPException, EtcdError, ValueError)

    def __init__(self, url, timeout=10.0, tls=None, user=None):
        """tls: a make_test_pki() dict (https, the client certificate);
        user: (name, password), authenticated on first use."""
        scheme, rest = url.split("://", 1)
        assert scheme in ("http", "https") and (scheme == "https") == (tls is not None)
        host, port = rest.rstrip("/").rsplit(":", 1)
        self.host, self.port, self.timeout = host, int(port), timeout
        self.conn = None
        self.context = None
        if tls is not None:
            self.context = ssl.create_default_context(cafile=tls["ca"])
            self.context.load_cert_chain(*tls["client"])
        self.user = user
        self.token = None

    def _connect(self):
        if self.context is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self.context)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def reset(self):
        """After a failed call: the next one starts on a fresh connection."""
        self.close()

    def call(self, path, body):
        """POST body (a dict) to path; the decoded JSON answer. With a
        user, a token etcd calls invalid is renewed once."""
        if self.user is not None and self.token is None:
            self.token = self._call("/v3/auth/authenticate",
                                    {"name": self.user[0], "password": self.user[1]})["token"]
        try:
            return self._call(path, body)
        except EtcdError as e:
            if self.user is None or "invalid auth token" not in e.body:
                raise
            self.token = None
            return self.call(path, body)

    def _call(self, path, body):
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.token is not None and path != "/v3/auth/authenticate":
            headers["Authorization"] = self.token
        for attempt in (0, 1):
            reused = self.conn is not None
            if self.conn is None:
                self.conn = self._connect()
            try:
                self.conn.request("POST", path, data, headers)
                resp = self.conn.getresponse()
                text = resp.read().decode(errors="replace")
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    ssl.SSLEOFError):
                # a keep-alive connection etcd had closed (idle, or a restart;
                # over TLS, writing to it fails with SSLEOFError): once more
                # on a fresh one. Never after a timeout, when the request may
                # have been applied.
                self.close()
                if attempt == 1 or not reused:
                    raise
            except (http.client.HTTPException, OSError):
                self.close()
                raise
        if resp.status != 200:
            raise EtcdError(resp.status, text)
        return json.loads(text)

    @staticmethod
    def _revision(answer):
        return int(answer["header"]["revision"])

    # -- operations, usable alone or inside txn() --------------------------

    @staticmethod
    def op_put(key, value):
        return {"requestPut": {"key": _b64(key), "value": _b64(value)}}

    @staticmethod
    def op_delete(key):
        return {"requestDeleteRange": {"key": _b64(key)}}

    @staticmethod
    def op_delete_prefix(prefix):
        return {"requestDeleteRange": {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))}}

    # -- calls --------------------------------------------------------------

    def put(self, key, value):
        return self._revision(self.call("/v3/kv/put", {"key": _b64(key), "value": _b64(value)}))

    def delete(self, key):
        return self._revision(self.call("/v3/kv/deleterange", {"key": _b64(key)}))

    def delete_prefix(self, prefix):
        return self._revision(self.call("/v3/kv/deleterange", {
            "key": _b64(prefix), "range_end": _b64(prefix_end(prefix))}))

    def txn(self, ops, compare=()):
        """One transaction: `ops` if every compare holds; (succeeded, revision)."""
        answer = self.call("/v3/kv/txn", {"compare": list(compare), "success": list(ops)})
        return bool(answer.get("succeeded")), self._revision(answer)

    def get_prefix(self, prefix, revision=0):
        """({key bytes: value bytes}, revision) of every key under prefix."""
        body = {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))}
        if revision:
            body["revision"] = str(revision)
        answer = self.call("/v3/kv/range", body)
        kvs = {_unb64(kv["key"]): _unb64(kv.get("value", "")) for kv in answer.get("kvs", [])}
        return kvs, self._revision(answer)

    def revision(self):
        """The store's current revision."""
        return self._revision(self.call("/v3/kv/range", {"key": _b64("\0"), "limit": 1}))

    def compact(self, revision=None):
        """Compacts the history up to `revision` (default: the current one),
        physically (etcd answers once the old revisions are gone)."""
        rev = revision if revision is not None else self.revision()
        self.call("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        return rev


class EtcdServer:
    """One etcd process, a single-member cluster on loopback.

    data_dir: where etcd keeps its data; None = a new temporary directory,
    removed by cleanup() (a given directory is left in place). The client
    and peer ports are chosen once, so that a restart (start() after stop()
    or kill()) serves the same url on the same data.
    """

    def __init__(self, data_dir=None, name="chring-test", tls=None, extra_args=()):
        self.root = tempfile.mkdtemp(prefix="chring-etcd-")
        self.owns_data = data_dir is None
        self.data_dir = data_dir or os.path.join(self.root, "data")
        self.name = name
        self.tls = tls
        self.extra_args = list(extra_args)
        self.root_password = None  # set by enable_auth(): etcdctl runs as root
        self.client_port, self.peer_port = free_ports(2)
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.client_port)
        self.peer_url = "http://127.0.0.1:%d" % self.peer_port
        self.log_path = os.path.join(self.root, "etcd.log")
        self.process = None
        self._log = None

    # -- lifecycle ------------------------------------------------------------

    def _command(self):
        return [ETCD,
                "--name", self.name,
                "--data-dir", self.data_dir,
                "--listen-client-urls", self.url,
                "--advertise-client-urls", self.url,
                "--listen-peer-urls", self.peer_url,
                "--initial-advertise-peer-urls", self.peer_url,
                "--initial-cluster", "%s=%s" % (self.name, self.peer_url),
                "--initial-cluster-state", "new",
                "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"] + (
                    ["--cert-file", self.tls["server"][0], "--key-file", self.tls["server"][1],
                     "--client-cert-auth", "--trusted-ca-file", self.tls["ca"]] if self.tls else []
                ) + self.extra_args

    def start(self, timeout=30.0):
        """Starts etcd (on the existing data, if any) and waits until it
        answers a read; raises RuntimeError with its log if it does not."""
        if self.process is not None:
            raise RuntimeError("etcd already running")
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(self._command(), stdin=subprocess.DEVNULL,
                                        stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + timeout
        client = EtcdClient(self.url, timeout=2.0, tls=self.tls,
                            user=("root", self.root_password) if self.root_password is not None else None)
        try:
            while True:
                if self.process.poll() is not None:
                    code = self.process.returncode
                    self._reap()
                    raise RuntimeError("etcd exited with %s:\n%s" % (code, self.log_text()[-4000:]))
                try:
                    client.revision()
                    return
                except EtcdError as e:
                    if "user name is empty" in e.body:
                        return  # it answers, with authentication on
                except (OSError, http.client.HTTPException):
                    pass
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError("etcd did not answer within %.0f s:\n%s"
                                       % (timeout, self.log_text()[-4000:]))
                time.sleep(0.05)
        finally:
            client.close()

    def _reap(self):
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self, timeout=10.0):
        """SIGTERM, then SIGKILL if it has not exited after `timeout`."""
        if self.process is None:
            return
        end_group(self.process, timeout)
        self._reap()

    def kill(self):
        """SIGKILL: etcd dies at once, whatever it was doing."""
        if self.process is None:
            return
        end_group(self.process, sig=signal.SIGKILL)
        self._reap()

    def running(self):
        return self.process is not None and self.process.poll() is None

    def cleanup(self):
        """Stops etcd and removes the temporary files (a given data_dir stays)."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            print("etcd log (%s), last lines:\n%s" % (self.log_path, self.log_text()[-2000:]))
        self.cleanup()
        return False

    def log_text(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    # -- clients and maintenance ------------------------------------------------

    def client(self, timeout=10.0, user=None):
        """A client; with authentication on, `user` (name, password), root's by default."""
        if user is None and self.root_password is not None:
            user = ("root", self.root_password)
        return EtcdClient(self.url, timeout=timeout, tls=self.tls, user=user)

    def etcdctl_flags(self):
        flags = ["--endpoints", self.url]
        if self.tls:
            flags += ["--cacert", self.tls["ca"], "--cert", self.tls["client"][0], "--key", self.tls["client"][1]]
        if self.root_password is not None:
            flags += ["--user", "root", "--password", self.root_password]
        return flags

    def enable_auth(self, root_password):
        """Creates the root user and turns authentication on; etcdctl and
        client() then run as root."""
        self._etcdctl_ok("user", "add", "root", "--new-user-password=" + root_password)
        self._etcdctl_ok("user", "grant-role", "root", "root")
        self._etcdctl_ok("auth", "enable")
        self.root_password = root_password

    def etcdctl(self, *args, input=None, timeout=60):
        """Runs etcdctl against this server: (exit status, stdout, stderr) as text."""
        env = dict(os.environ, ETCDCTL_API="3")
        r = subprocess.run([ETCDCTL] + self.etcdctl_flags() + list(args), env=env,
                           input=input.encode() if isinstance(input, str) else input,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

    def _etcdctl_ok(self, *args, **kwargs):
        code, out, err = self.etcdctl(*args, **kwargs)
        if code != 0:
            raise RuntimeError("etcdctl %s failed (%d): %s" % (" ".join(args), code, err))
        return out

    def put(self, key, value):
        """A put by etcdctl, as an operator would type it (no validation)."""
        self._etcdctl_ok("put", key, value)

    def snapshot_save(self, path):
        """A consistent snapshot of the running server into `path`."""
        self._etcdctl_ok("snapshot", "save", path)

    def snapshot_restore(self, path):
        """Replaces the data with snapshot `path` and restarts: the store
        goes back to the snapshot's revision (a restore from backup)."""
        self.stop()
        restored = self.data_dir + ".restore"
        shutil.rmtree(restored, ignore_errors=True)
        env = dict(os.environ, ETCDCTL_API="3")
        r = subprocess.run([ETCDCTL, "snapshot", "restore", path,
                            "--name", self.name, "--data-dir", restored,
                            "--initial-cluster", "%s=%s" % (self.name, self.peer_url),
                            "--initial-advertise-peer-urls", self.peer_url],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("etcdctl snapshot restore failed: %s" % r.stdout.decode())
        shutil.rmtree(self.data_dir, ignore_errors=True)
        os.rename(restored, self.data_dir)
        self.start()

    def compact(self, revision=None):
        """Compacts the history up to `revision` (default: the current one)."""
        kv = self.client()
        try:
            return kv.compact(revision)
        finally:
            kv.close()
