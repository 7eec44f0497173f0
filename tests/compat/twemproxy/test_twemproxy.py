#!/usr/bin/env python3
"""suite 'compat': CHR_PLACEMENT_KETAMA against a real twemproxy.

Debian's nutcracker (twemproxy 0.5.0) runs on loopback with
`distribution: ketama` and `hash: md5` in front of 101..200 fake memcached
backends (fake_memcached.py, one asyncio process on all their ports, each
answering `get k` with its own port). Keys go through nutcracker with a
plain socket; the port that answers says which server twemproxy chose,
and it must be the server chring's ketama ring owns the key with, for the
same list and weights (node id = twemproxy's server name: the `name` when
the line has one, "127.0.0.1" for port 11211, else "127.0.0.1:PORT").

This covers what libmemcached cannot: it aborts past 100 servers (see
test_ketama_libmemcached.cpp), twemproxy does not.

Ties: when two servers have a point of the same value, the key just below
it goes to whichever comes first in the sorted continuum. twemproxy sorts
the continuum with qsort comparing values only, and builds it from its own
server array, which conf_validate_server sorts by name: shorter names
first, then bytes (string_compare). Debian 12's glibc 2.36 qsort is a
stable merge sort, so tied points keep that name order, and chring
reproduces it when the tag is the server's position in that order, not in
the configuration (twemproxy_tags). Ties are rare (about one list in eight
of 200 servers has one), so the last scenario searches for a list with a
tied point, writes its configuration in reverse name order (so the two
orders disagree on every tie) and sends keys that land on it. Each
scenario prints how many keys landed on tied points and how many of the
mismatches (which fail the test all the same) were among them.

    test_twemproxy.py PATH/TO/chring_owners
"""

import bisect
import hashlib
import os
import random
import socket
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compat_support as cs  # noqa: E402

LIST_SIZES = (101, 200, 137, 173, 118, 189)
KEYS_PER_LIST = 2000
TIE_KEYS = 40  # keys sent onto the tied points of the tie scenario
MEMCACHED_DEFAULT_PORT = 11211
HERE = os.path.dirname(os.path.abspath(__file__))


def memcached_key(rng):
    """1..64 printable non-space bytes: what the memcached text protocol allows."""
    return bytes(rng.randint(0x21, 0x7E) for _ in range(rng.randint(1, 64)))


def ask(sock, reader, key):
    """The port of the backend that answered `get key` through twemproxy."""
    sock.sendall(b"get " + key + b"\r\n")
    header = reader.readline()
    if not header.startswith(b"VALUE "):
        raise RuntimeError(f"get {key!r}: twemproxy answered {header!r}")
    port = int(reader.readline())
    end = reader.readline()
    if end != b"END\r\n":
        raise RuntimeError(f"get {key!r}: expected END, got {end!r}")
    return port


def port_11211_if_free():
    """11211 as one more backend port when nothing listens there, so the
    default-port naming rule ("127.0.0.1" without the port) is exercised."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", MEMCACHED_DEFAULT_PORT))
        return [MEMCACHED_DEFAULT_PORT]
    except OSError:
        print("note: 127.0.0.1:11211 is taken; the default-port name is not exercised")
        return []
    finally:
        s.close()


def twemproxy_config(listen, servers):
    lines = ["compat:", f"  listen: 127.0.0.1:{listen}", "  hash: md5", "  distribution: ketama",
             "  auto_eject_hosts: false", "  preconnect: false", "  timeout: 5000", "  servers:"]
    lines += [f"   - {line}" for line in servers]
    return "\n".join(lines) + "\n"


def random_server_list(rng, ports, size):
    """Config lines, chring servers [(id, weight)] and the backend port of
    each position."""
    chosen = rng.sample(ports, size)
    lines, servers = [], []
    for position, port in enumerate(chosen):
        weight = rng.randint(1, 1000)
        line = f"127.0.0.1:{port}:{weight}"
        if rng.random() < 0.2:  # an explicit name: twemproxy hashes the name, not the address
            name = f"cache-{position}-{rng.randint(0, 99999)}"
            lines.append(f"{line} {name}")
            servers.append((name, weight))
        else:
            lines.append(line)
            server_id = "127.0.0.1" if port == MEMCACHED_DEFAULT_PORT else f"127.0.0.1:{port}"
            servers.append((server_id, weight))
    return lines, servers, chosen


def twemproxy_order(servers):
    """Configuration positions in twemproxy's server order: it sorts its
    servers by name, comparing lengths first, then bytes."""
    return sorted(range(len(servers)), key=lambda i: (len(servers[i][0].encode()), servers[i][0].encode()))


def twemproxy_view(servers):
    """`servers` in twemproxy's order (position = the chring tag that breaks
    ties as twemproxy does) and, per such position, the configuration position."""
    order = twemproxy_order(servers)
    return [servers[i] for i in order], order


def tied_values(points):
    """Point values that two different servers share."""
    return {v for i, (v, t) in enumerate(points) if i and v == points[i - 1][0] and t != points[i - 1][1]}


def successor_value(values, key):
    h = int.from_bytes(hashlib.md5(key).digest()[:4], "little") << 32
    return values[bisect.bisect_left(values, h) % len(values)]


def named_list_with_a_tie(helper, rng, ports, size, tmp):
    """A list of `size` named servers (names do not depend on the ports, so
    the points can be searched before twemproxy runs) in which two servers
    have a point of the same value, and the arc ending at it is at least
    half the mean arc (so keys landing on it are quick to find). About one
    random list in eight has a tie; one in three of those a wide arc.
    The list comes in reverse name order, the opposite of twemproxy's."""
    for attempt in range(1000):
        servers = [(f"tie{attempt}-{i}", rng.randint(1, 1000)) for i in reversed(range(size))]
        points = cs.chring_points(helper, "ketama", twemproxy_view(servers)[0], tmp)
        values = sorted({v for v, _ in points})
        wide = {v for i, v in enumerate(values) if v - values[i - 1] >= (1 << 64) // len(values) // 2}
        tied = tied_values(points) & wide
        if tied:
            chosen = rng.sample(ports, size)
            lines = [f"127.0.0.1:{port}:{w} {name}" for port, (name, w) in zip(chosen, servers)]
            return lines, servers, chosen, points, tied
    raise RuntimeError("no server list with a tied point found")


def keys_landing_on(values, targets, count):
    """`count` keys "tie-N" whose successor point is one of `targets`."""
    found = []
    n = 0
    while len(found) < count:
        key = b"tie-%d" % n
        n += 1
        if successor_value(values, key) in targets:
            found.append(key)
    return found


def run_list(procs, nutcracker, helper, tmp, tally, setup, keys, label):
    """Starts nutcracker on the list, sends every key through it and
    compares the answering backends with chring's owners."""
    lines, servers, chosen, listen, stats = setup
    conf = os.path.join(tmp, "nutcracker.yml")
    with open(conf, "w") as f:
        f.write(twemproxy_config(listen, lines))
    log = os.path.join(tmp, "nutcracker.log")
    proxy = procs.start([nutcracker, "-c", conf, "-o", log, "-p", os.path.join(tmp, "nutcracker.pid"),
                         "-s", str(stats), "-a", "127.0.0.1", "-v", "4"])
    try:
        cs.wait_for_port(listen, proxy, "nutcracker")
        position_of_port = {port: i for i, port in enumerate(chosen)}
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as sock:
            reader = sock.makefile("rb")
            real = [position_of_port[ask(sock, reader, k)] for k in keys]
        in_twemproxy_order, config_position = twemproxy_view(servers)
        ours = [config_position[t] for t in cs.chring_owners(helper, "ketama", in_twemproxy_order, keys, tmp)]
    except Exception:
        with open(log, errors="replace") as f:
            print("nutcracker log:\n" + f.read()[-4000:])
        raise
    finally:
        procs.stop(proxy)
    bad = tally.compare(label, keys, real, ours, lambda p: f"#{p} {servers[p][0]}")
    points = cs.chring_points(helper, "ketama", in_twemproxy_order, tmp)
    values, tied = [v for v, _ in points], tied_values(points)
    on_tie = {i for i, k in enumerate(keys) if successor_value(values, k) in tied}
    print(f"  ties: {len(tied)} point values shared by two servers, {len(on_tie)} keys land on one, "
          f"{len(on_tie.intersection(bad))} of the mismatches")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    helper = sys.argv[1]
    nutcracker = cs.find_tool("nutcracker", also=("/usr/sbin", "/usr/local/sbin"))
    rng = random.Random(0x7477656D)
    listen, stats, *backend_ports = cs.free_ports(2 + max(LIST_SIZES))
    backend_ports += port_11211_if_free()
    tally = cs.Tally()
    with cs.Processes() as procs, cs.temp_dir("chring-twemproxy-") as tmp:
        backends = procs.start([sys.executable, os.path.join(HERE, "fake_memcached.py"),
                                *map(str, backend_ports)], stdout=subprocess.PIPE)
        if backends.stdout.readline().strip() != b"ready":
            raise RuntimeError("fake_memcached.py did not start")
        for size in LIST_SIZES:
            lines, servers, chosen = random_server_list(rng, backend_ports, size)
            weights = [w for _, w in servers]
            keys = [memcached_key(rng) for _ in range(KEYS_PER_LIST)]
            run_list(procs, nutcracker, helper, tmp, tally, (lines, servers, chosen, listen, stats),
                     keys, f"ketama, {size} servers (weights {min(weights)}..{max(weights)})")
        # Ties do not occur by chance in a few thousand keys: find a list
        # with one and send keys that land on it.
        lines, servers, chosen, points, tied = named_list_with_a_tie(helper, rng, backend_ports,
                                                                     200, tmp)
        keys = keys_landing_on([v for v, _ in points], tied, TIE_KEYS)
        keys += [memcached_key(rng) for _ in range(500)]
        run_list(procs, nutcracker, helper, tmp, tally, (lines, servers, chosen, listen, stats),
                 keys, "ketama, 200 named servers with a tied point")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
