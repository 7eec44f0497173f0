#!/usr/bin/env python3
"""suite 'compat': CHR_PLACEMENT_NGINX against a real nginx.

Runs Debian's nginx on loopback, in the foreground and as one process, with
everything it writes inside a temporary directory: an upstream with
`hash $arg_k consistent;` over several `server 127.0.0.1:PORT weight=N;`
lines, a front server proxying `/?k=KEY` to it, and one backend server per
upstream entry answering with its own "127.0.0.1:PORT". Each key's answer
must be the server chring's nginx ring owns the key with, for the same
list (node id = the `server` text, tag = its position, weight = `weight=`).

Scenarios: the base list; the same list with one server marked `down`
(chring: weight 0); the list with one server removed; one weight changed.
Then two servers whose point chains share a value (found among ports
20000..31999): nginx keeps only the first server's copy (its qsort compares
values only; glibc 2.36's stable merge sort keeps configuration order), as
chring does;
and with that first server `down`, nginx keeps its copy and steps to the
next point, where chring's weight 0 leaves the second server's copy. Keys
on that one point are the known difference between `down` and weight 0:
they are counted and printed, and nginx's own rule is checked on them.

Keys: $arg_k is the raw query text, not unescaped. Most keys are URL-safe
characters; some carry percent-escapes, which chring is given as the raw
escaped text, the bytes nginx hashes.

    test_nginx.py PATH/TO/chring_owners
"""

import bisect
import http.client
import os
import random
import socket
import sys
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compat_support as cs  # noqa: E402

SERVERS = 7
KEYS_PER_SCENARIO = 3000
URL_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


def query_key(rng):
    """1..40 URL-safe characters; about half the keys also carry %XX escapes
    of any byte."""
    parts = []
    for _ in range(rng.randint(1, 40)):
        if rng.random() < 0.04:
            parts.append(b"%%%02X" % rng.randint(0, 255))
        else:
            parts.append(bytes([rng.choice(URL_SAFE)]))
    return b"".join(parts)


def nginx_config(tmp, front, upstream_lines, backend_ports):
    """The whole configuration: nothing outside `tmp` is written."""
    backends = "\n".join(
        f"    server {{ listen 127.0.0.1:{p}; location / {{ return 200 \"127.0.0.1:{p}\"; }} }}"
        for p in backend_ports)
    upstream = "\n".join(f"        {line}" for line in upstream_lines)
    return f"""daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 100000;
    upstream compat {{
        hash $arg_k consistent;
{upstream}
    }}
    server {{
        listen 127.0.0.1:{front};
        location / {{
            proxy_pass http://compat;
            # A failed backend must show as an error, never as a silent
            # reroute that would look like a different mapping.
            proxy_next_upstream off;
        }}
    }}
{backends}
}}
"""


def upstream_line(server_id, weight, down):
    return f"server {server_id} weight={weight} max_fails=0{' down' if down else ''};"


class PortTaken(Exception):
    """Another process took one of the ports between choosing and nginx's
    bind (tests run in parallel): the run is repeated with new ports."""


class Nginx:
    def __init__(self, binary, procs, tmp, front):
        self.binary, self.procs, self.tmp, self.front = binary, procs, tmp, front

    def answers(self, config, keys):
        """Starts nginx with `config`, asks it for every key, stops it."""
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(config)
        error_log = os.path.join(self.tmp, "error.log")
        process = self.procs.start([self.binary, "-p", self.tmp, "-c", conf, "-e", error_log])
        try:
            cs.wait_for_port(self.front, process, "nginx")
            http_conn = http.client.HTTPConnection("127.0.0.1", self.front, timeout=10)
            replies = []
            for key in keys:
                http_conn.request("GET", "/?k=" + key.decode("ascii"))
                response = http_conn.getresponse()
                body = response.read().decode()
                if response.status != 200:
                    raise RuntimeError(f"key {key!r}: HTTP {response.status}: {body[:200]}")
                replies.append(body)
            http_conn.close()
            return replies
        except Exception as e:
            log = ""
            if os.path.exists(error_log):
                with open(error_log, errors="replace") as f:
                    log = f.read()
                print("nginx error.log:\n" + log[-4000:])
            if "Address already in use" in log:
                raise PortTaken(str(e)) from e
            raise
        finally:
            self.procs.stop(process)


def ask_both(nginx, helper, tmp, servers, down, keys):
    """nginx's and chring's owner position for each key. servers: [(id,
    weight)] in configuration order; down: the positions marked `down`
    (weight 0 for chring)."""
    lines = [upstream_line(sid, w, i in down) for i, (sid, w) in enumerate(servers)]
    ports = [int(sid.rsplit(":", 1)[1]) for sid, _ in servers]
    replies = nginx.answers(nginx_config(nginx.tmp, nginx.front, lines, ports), keys)
    position_of = {sid: i for i, (sid, _) in enumerate(servers)}
    chring_list = [(sid, 0 if i in down else w) for i, (sid, w) in enumerate(servers)]
    return [position_of[r] for r in replies], cs.chring_owners(helper, "nginx", chring_list, keys, tmp)


def describe_list(servers, down):
    return ", ".join(f"{sid} w={w}{' down' if i in down else ''}" for i, (sid, w) in enumerate(servers))


def run_scenario(nginx, helper, tally, tmp, label, servers, down, keys):
    real, ours = ask_both(nginx, helper, tmp, servers, down, keys)
    print(f"{label}: {describe_list(servers, down)}")
    tally.compare(label, keys, real, ours, lambda p: f"#{p} {servers[p][0]}")


# ---- a point two servers share ------------------------------------------------

CANDIDATE_PORTS = range(20000, 32000)  # below Linux's ephemeral range


def point_chain(port, count=160):
    """nginx's points for `server 127.0.0.1:PORT`: chained CRC-32 of
    host \0 port LE32(previous point)."""
    base, prev = b"127.0.0.1\0" + str(port).encode(), 0
    for _ in range(count):
        prev = zlib.crc32(base + prev.to_bytes(4, "little"))
        yield prev


def port_is_free(port):
    """Nothing listens there (SO_REUSEADDR, as nginx binds: a port in
    TIME_WAIT from an earlier run counts as free)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def ports_sharing_a_point(exclude):
    """Pairs of free loopback ports whose point chains (weight 1) have a value
    in common, in port order: about one port in 600 collides with an earlier
    one."""
    first_port = {}
    for port in CANDIDATE_PORTS:
        if port in exclude:
            continue
        for value in point_chain(port):
            other = first_port.setdefault(value, port)
            if other != port and port_is_free(other) and port_is_free(port):
                yield other, port


def successor(values, key):
    """Index of the point a key lands on (lower_bound, wrapping)."""
    return bisect.bisect_left(values, zlib.crc32(key) << 32) % len(values)


# Points ngx_http_upstream_get_chash_peer examines before round robin: the
# first at tries = 0, then `hash++; tries++` while `tries > 20` is false, so
# the points at tries 0..20, 21 in all (20 would be one short).
NGINX_CHASH_POINTS = 21


def nginx_with_down(points, down, key):
    """nginx's lookup with `down` servers: their points stay on the ring and
    the lookup steps to the next point (21 points, then round robin: None)."""
    i = successor([v for v, _ in points], key)
    for _ in range(NGINX_CHASH_POINTS):
        if points[i][1] not in down:
            return points[i][1]
        i = (i + 1) % len(points)
    return None


def shared_point_scenarios(nginx, helper, tally, tmp, rng, servers, exclude):
    """Servers A (first) and B (last) share a point. nginx keeps A's copy
    (the first in configuration order), as chring does. With A `down`,
    nginx keeps A's copy and skips to the next point, while chring's weight
    0 leaves B's copy in place: keys on that point are the one place where
    `down` and weight 0 differ. Checked: nginx follows that model on every
    key, and chring agrees with nginx on every other key."""
    # The shared point's arc depends on the other servers' points: it can be
    # too narrow for any of the probe keys, so later pairs are tried (a
    # bounded number) until one has keys on it.
    for tried, (a, b) in enumerate(ports_sharing_a_point(exclude), 1):
        twins = [(f"127.0.0.1:{a}", 1)] + servers[1:4] + [(f"127.0.0.1:{b}", 1)]
        points = cs.chring_points(helper, "nginx", twins, tmp)
        shared = (set(point_chain(a)) & set(point_chain(b))).pop() << 32
        values = [v for v, _ in points]
        on_shared = [k for k in (b"dup-%d" % n for n in range(200000))
                     if values[successor(values, k)] == shared][:40]
        if on_shared:
            break
        print(f"ports {a} and {b}: no probe key lands on their shared point {shared >> 32:#010x}")
        if tried == 20:
            raise RuntimeError("20 port pairs sharing a point, and no probe key on any shared point")
    else:
        raise RuntimeError("no two free ports share a point")
    keys = on_shared + [query_key(rng) for _ in range(500)]
    print(f"ports {a} and {b} share point {shared >> 32:#010x}; {len(on_shared)} keys land on it")

    run_scenario(nginx, helper, tally, tmp, "shared point, both up", twins, set(), keys)

    down = {0}
    real, ours = ask_both(nginx, helper, tmp, twins, down, keys)
    print(f"shared point, its keeper down: {describe_list(twins, down)}")
    model = [nginx_with_down(points, down, k) for k in keys]
    describe = lambda p: f"#{p} {twins[p][0]}" if p is not None else "round robin"  # noqa: E731
    tally.compare("shared point, keeper down: nginx vs its skip-to-next-point model", keys, real,
                  model, describe)
    off = len(on_shared)
    tally.compare("shared point, keeper down: chring (weight 0) on keys off that point",
                  keys[off:], real[off:], ours[off:], describe)
    differ = sum(real[i] != ours[i] for i in range(off))
    print(f"  known difference: chring routes {differ} of the {off} keys on the shared point "
          f"elsewhere than nginx (weight 0 drops A's copy, `down` keeps and skips it)")


def long_down_run_scenario(nginx, helper, tally, tmp, servers):
    """A heavy `down` server makes long runs of down points. Keys whose point
    starts a run of exactly 20 of them are still hashed by nginx, to the server
    of the 21st point (a 20-point model would send them to round robin), and
    keys on runs of 19 to the 20th: the model's 21 points are nginx's."""
    heavy = [(servers[0][0], 100), (servers[1][0], 1), (servers[2][0], 1)]
    down = {0}
    points = cs.chring_points(helper, "nginx", heavy, tmp)
    values = [v for v, _ in points]

    def run_length(key):
        i, n = successor(values, key), 0
        while n <= NGINX_CHASH_POINTS and points[(i + n) % len(points)][1] in down:
            n += 1
        return n

    keys = {19: [], 20: []}
    for n in range(400000):
        k = b"run-%d" % n
        length = run_length(k)
        if length in keys and len(keys[length]) < 30:
            keys[length].append(k)
        if all(len(v) == 30 for v in keys.values()):
            break
    if not keys[20]:
        raise RuntimeError("no key starts a run of 20 down points")
    keys = keys[19] + keys[20]
    real, _ = ask_both(nginx, helper, tmp, heavy, down, keys)
    print(f"long down runs: {describe_list(heavy, down)}; {len(keys)} keys on runs of 19 and 20 down points")
    model = [nginx_with_down(points, down, k) for k in keys]
    describe = lambda p: f"#{p} {heavy[p][0]}" if p is not None else "round robin"  # noqa: E731
    tally.compare("runs of 19-20 down points: nginx vs its 21-point model", keys, real, model, describe)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    helper = sys.argv[1]
    binary = cs.find_tool("nginx", also=("/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"))
    for attempt in range(3):
        try:
            return run_all(helper, binary)
        except PortTaken as e:
            print(f"attempt {attempt + 1}: a port was taken before nginx bound it ({e}); again with new ports")
    print("FAIL: ports taken by other processes on three attempts")
    return 1


def run_all(helper, binary):
    rng = random.Random(0x6E67696E78)
    front, *backend_ports = cs.free_ports(1 + SERVERS)
    servers = [(f"127.0.0.1:{p}", rng.choice((1, 1, 2, 3, 5))) for p in backend_ports]
    servers[0] = (servers[0][0], 4)  # at least one weight > 1 whatever the draw
    tally = cs.Tally()
    with cs.Processes() as procs, cs.temp_dir("chring-nginx-") as tmp:
        nginx = Nginx(binary, procs, tmp, front)

        def scenario(label, server_list, down=frozenset()):
            keys = [query_key(rng) for _ in range(KEYS_PER_SCENARIO)]
            run_scenario(nginx, helper, tally, tmp, label, server_list, down, keys)

        scenario("base", servers)
        scenario("one server down", servers, down={2})
        scenario("one server removed", servers[:4] + servers[5:])
        reweighted = list(servers)
        reweighted[1] = (reweighted[1][0], reweighted[1][1] + 3)
        scenario("one weight raised by 3", reweighted)
        shared_point_scenarios(nginx, helper, tally, tmp, rng, servers, set(backend_ports) | {front})
        long_down_run_scenario(nginx, helper, tally, tmp, servers)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
