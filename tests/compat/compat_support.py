"""What the compat drivers share: free loopback ports, server processes that
are always stopped, chring's answers through the chring_owners helper, and
the pass/fail summary. Python 3 standard library only."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77  # meson: the test was skipped


def find_tool(name, also=()):
    """The path of a server binary, or exit 77 (skip) if it is not installed."""
    for path in [shutil.which(name)] + [os.path.join(d, name) for d in also]:
        if path and os.access(path, os.X_OK):
            return path
    print(f"SKIP: {name} is not installed (scripts/deps.sh installs it)")
    sys.exit(SKIP)


def free_ports(count):
    """`count` distinct loopback TCP ports that are free right now (all held
    open together while choosing, so none is returned twice)."""
    held = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def wait_for_port(port, process, what, timeout=15.0):
    """Waits until something accepts on 127.0.0.1:port; fails if `process`
    exits first or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} is not listening on 127.0.0.1:{port} after {timeout:.0f} s")


class Processes:
    """Started server processes, every one stopped on exit whatever happens
    (use as a context manager)."""

    def __init__(self):
        self.running = []

    def start(self, argv, **kwargs):
        p = subprocess.Popen(argv, **kwargs)
        self.running.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.running.remove(p)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in list(self.running):
            self.stop(p)


def temp_dir(prefix):
    return tempfile.TemporaryDirectory(prefix=prefix)


def _servers_file(directory, servers):
    path = os.path.join(directory, "servers.txt")
    with open(path, "w") as f:
        for server_id, weight in servers:
            f.write(f"{weight} {server_id}\n")
    return path


def chring_owners(helper, placement, servers, keys, directory):
    """chring's owner position for each key (bytes, no b'\\n'); `servers` is
    the configuration list of (id, weight), position = tag."""
    path = _servers_file(directory, servers)
    out = subprocess.run([helper, placement, path], input=b"".join(k + b"\n" for k in keys),
                         stdout=subprocess.PIPE, check=True).stdout
    tags = [int(line) for line in out.split()]
    assert len(tags) == len(keys), f"chring_owners answered {len(tags)} of {len(keys)} keys"
    return tags


def chring_points(helper, placement, servers, directory):
    """The ring's points in order, as (value, tag)."""
    path = _servers_file(directory, servers)
    out = subprocess.run([helper, "--points", placement, path], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return [(int(v, 16), int(t)) for v, t in (line.split() for line in out.splitlines())]


class Tally:
    """Counts comparisons per scenario and prints the first few mismatches."""

    def __init__(self):
        self.checked = 0
        self.mismatched = 0
        self.scenarios = []

    def compare(self, scenario, keys, real, ours, describe):
        bad = [i for i in range(len(keys)) if real[i] != ours[i]]
        for i in bad[:5]:
            print(f"  MISMATCH {scenario}: key {keys[i]!r}: real {describe(real[i])}, "
                  f"chring {describe(ours[i])}")
        self.checked += len(keys)
        self.mismatched += len(bad)
        self.scenarios.append((scenario, len(keys), len(bad)))
        print(f"{scenario}: {len(keys)} keys, {len(bad)} mismatches")
        return bad

    def finish(self):
        print(f"{self.checked} keys compared in {len(self.scenarios)} scenarios, "
              f"{self.mismatched} mismatches")
        print(f"{len(self.scenarios) - sum(1 for s in self.scenarios if s[2])} passed, "
              f"{sum(1 for s in self.scenarios if s[2])} failed")
        return 1 if self.mismatched else 0
