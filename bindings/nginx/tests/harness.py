"""Real nginx processes on loopback for the chring end-to-end tests.

Everything an nginx instance writes (pid, logs, temp files) stays in one
temporary directory; each instance runs in the foreground (`daemon off`)
under this process, which stops it whatever happens (`with` blocks).
Python 3 standard library only.
"""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

# nginx logs these only when something went badly wrong (a worker crash is
# "exited on signal N"); a test fails if its instances logged any.
_BAD_LOG = re.compile(r"\[(alert|crit)\]|exited on signal|core dumped")


_handed_out = set()


def free_ports(count):
    """`count` loopback ports that were free a moment ago, none handed out
    before in this process: a stopped backend's port must not come back as
    another instance's (a key routed to it would reach the wrong server)."""
    sockets, ports = [], []
    try:
        while len(ports) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            port = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                ports.append(port)
    finally:
        for s in sockets:
            s.close()
    return ports


class Nginx:
    """One nginx master (and its workers) with its own prefix directory.

    `http_body` is the text inside `http { ... }`; a control server on its
    own port answers the configuration generation so that reload() can wait
    until the new configuration serves. `user`: the workers' `user` (and
    group) when running as root, else root.
    """

    def __init__(self, nginx_bin, root, name, modules=(), main_extra="", workers=2, env=None,
                 user=None):
        self.nginx_bin = nginx_bin
        self.env = dict(os.environ, **(env or {}))
        self.prefix = os.path.join(root, name)
        self.modules = list(modules)
        self.main_extra = main_extra
        self.workers = workers
        self.user = user
        self.control_port = free_ports(1)[0]
        self.generation = 0
        self.process = None
        os.makedirs(os.path.join(self.prefix, "logs"), exist_ok=True)
        self.conf_path = os.path.join(self.prefix, "nginx.conf")
        self.error_log = os.path.join(self.prefix, "logs", "error.log")

    # -- configuration ----------------------------------------------------

    def render(self, http_body):
        p = self.prefix
        lines = ["load_module %s;" % m for m in self.modules]
        if os.geteuid() == 0:
            # root: workers must reach the 0700 temp dir (another user's
            # case makes what its workers read reachable)
            lines.append("user %s;" % (self.user or "root"))
        lines += [
            "worker_processes %d;" % self.workers,
            "pid %s/nginx.pid;" % p,
            "error_log %s notice;" % self.error_log,
            self.main_extra,
            "events { worker_connections 1024; }",
            "http {",
            "  access_log off;",
            "  client_body_temp_path %s/body;" % p,
            "  proxy_temp_path %s/proxy;" % p,
            "  fastcgi_temp_path %s/fastcgi;" % p,
            "  uwsgi_temp_path %s/uwsgi;" % p,
            "  scgi_temp_path %s/scgi;" % p,
            "  server { listen 127.0.0.1:%d; return 200 'generation %d'; }"
            % (self.control_port, self.generation),
            http_body,
            "}",
        ]
        return "\n".join(lines) + "\n"

    def write(self, http_body):
        with open(self.conf_path, "w") as f:
            f.write(self.render(http_body))

    def test_config(self, http_body):
        """Runs `nginx -t` on the configuration: (exit status, output)."""
        self.write(http_body)
        r = subprocess.run(
            [self.nginx_bin, "-t", "-p", self.prefix + "/", "-c", self.conf_path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, env=self.env)
        return r.returncode, r.stdout.decode(errors="replace")

    # -- lifecycle --------------------------------------------------------

    def start(self, http_body):
        self.generation += 1
        status, out = self.test_config(http_body)
        if status != 0:
            raise RuntimeError("nginx -t failed for %s:\n%s" % (self.prefix, out))
        self._output = open(os.path.join(self.prefix, "logs", "stderr.log"), "ab")
        self.process = subprocess.Popen(
            [self.nginx_bin, "-p", self.prefix + "/", "-c", self.conf_path, "-g", "daemon off;"],
            stdout=self._output, stderr=subprocess.STDOUT, env=self.env)
        self._wait_generation()

    def reload(self, http_body):
        """Applies a new configuration (SIGHUP) and waits until it serves."""
        self.generation += 1
        status, out = self.test_config(http_body)
        if status != 0:
            raise RuntimeError("nginx -t failed on reload of %s:\n%s" % (self.prefix, out))
        self.process.send_signal(signal.SIGHUP)
        self._wait_generation()

    def _wait_generation(self, timeout=20.0):
        # Old workers stop accepting when told to quit: 5 fresh connections in
        # a row answered by the new generation means it alone serves.
        want = ("generation %d" % self.generation).encode()
        deadline = time.monotonic() + timeout
        in_a_row = 0
        while in_a_row < 5:
            if self.process.poll() is not None:
                raise RuntimeError("nginx %s exited with %s:\n%s"
                                   % (self.prefix, self.process.returncode, self.log_text()))
            if time.monotonic() > deadline:
                raise RuntimeError("nginx %s did not serve generation %d:\n%s"
                                   % (self.prefix, self.generation, self.log_text()))
            try:
                status, body = http_get(self.control_port, "/")
                in_a_row = in_a_row + 1 if body == want else 0
            except OSError:
                in_a_row = 0
            if in_a_row < 5:
                time.sleep(0.02)
        # Then until the old workers are gone: one that has not yet closed
        # its listening sockets could still accept on a removed listener.
        while len(self._workers()) > self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError("nginx %s: old workers still running after reload"
                                   % self.prefix)
            time.sleep(0.02)

    def stop(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._output.close()
        self.process = None

    def _workers(self):
        """(pid, utime + stime ticks) of each live child of this master."""
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            if int(fields[1]) == self.process.pid:  # ppid
                found.append((int(pid), int(fields[11]) + int(fields[12])))
        return found

    def worker_cpu_seconds(self):
        """User + system CPU time used so far by this master's live workers."""
        return sum(ticks for _, ticks in self._workers()) / os.sysconf("SC_CLK_TCK")

    def log_text(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def bad_log_lines(self):
        return [l for l in self.log_text().splitlines() if _BAD_LOG.search(l)]


class Workspace:
    """A temporary directory and the nginx instances in it; stops them all."""

    def __init__(self, nginx_bin, keep=False):
        self.nginx_bin = nginx_bin
        self.keep = keep or bool(os.environ.get("CHRING_NGINX_KEEP"))
        self.root = tempfile.mkdtemp(prefix="chring-nginx-")
        self.instances = []

    def nginx(self, name, **kwargs):
        inst = Nginx(self.nginx_bin, self.root, name, **kwargs)
        self.instances.append(inst)
        return inst

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for inst in self.instances:
            try:
                inst.stop()
            except Exception as e:  # keep stopping the others
                print("warning: stopping %s: %s" % (inst.prefix, e))
        if exc[0] is not None or self.keep:
            print("nginx files kept in %s" % self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        return False


class Backends:
    """Loopback `server` blocks that answer their own `server` text.

    They run in one nginx instance; stop()/start() reload it without or
    with a backend's listener, so that connecting to it is refused.
    """

    def __init__(self, workspace, count):
        self.ports = free_ports(count)
        self.ids = ["127.0.0.1:%d" % p for p in self.ports]
        self.alive = set(self.ids)
        self.instance = workspace.nginx("backends", workers=1)

    def _body(self):
        return "\n".join(
            "  server { listen %s; default_type text/plain; return 200 '%s'; }"
            % (i, i) for i in self.ids if i in self.alive)

    def start(self):
        self.instance.start(self._body())

    def set_alive(self, ids):
        self.alive = set(ids)
        self.instance.reload(self._body())


def http_get(port, path, connection=None, timeout=10):
    """GET on 127.0.0.1:port; returns (status, body bytes)."""
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        if connection is None:
            conn.close()


def route(port, paths):
    """Sends every path over one keep-alive connection; returns the bodies
    of 200 answers as text and "HTTP <status>" for others, in order."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out = []
    try:
        for path in paths:
            status, body = http_get(port, path, connection=conn)
            out.append(body.decode() if status == 200 else "HTTP %d" % status)
    finally:
        conn.close()
    return out


class Predictor:
    """bindings/nginx/tests/chring_predict: the C API's answer for a membership."""

    def __init__(self, program, root):
        self.program = program
        self.root = root

    def _servers_file(self, members):
        """members: (server text, weight) or (server text, weight, zone)."""
        path = os.path.join(self.root, "members.txt")
        with open(path, "w") as f:
            for m in members:
                f.write(("%d %s %s\n" % (m[1], m[2], m[0])) if len(m) > 2 else
                        ("%d %s\n" % (m[1], m[0])))
        return path

    def _run(self, args, members, stdin_lines=None):
        zoned = ["--zoned"] if any(len(m) > 2 for m in members) else []
        cmd = [self.program] + list(args) + zoned + [self._servers_file(members)]
        data = "".join(k + "\n" for k in stdin_lines) if stdin_lines is not None else ""
        r = subprocess.run(cmd, input=data.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(cmd), r.stderr.decode()))
        return r.stdout.decode().splitlines()

    def owners(self, members, keys, options=()):
        """members: [(server text, weight)] in configuration order."""
        return self._run(options, members, keys)

    def replicas(self, members, keys, n, options=()):
        return [l.split("\t") for l in self._run(list(options) + ["--replicas", str(n)],
                                                 members, keys)]

    def fingerprint(self, members, options=()):
        """The ring's fingerprint, "0x" and 16 hex digits."""
        return self._run(list(options) + ["--fingerprint"], members)[0]

    def ownership(self, members, options=()):
        shares = {}
        for line in self._run(list(options) + ["--ownership"], members):
            fraction, server_id = line.split(" ", 1)
            shares[server_id] = float(fraction)
        return shares
