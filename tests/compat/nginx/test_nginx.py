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
(chring: weight 0; nginx keeps its points and skips them, which routes
the same unless one of them was the only copy of a value it shares with
another server); the list with one server removed; one weight changed.

Keys: $arg_k is the raw query text, not unescaped. Most keys are URL-safe
characters; some carry percent-escapes, which chring is given as the raw
escaped text, the bytes nginx hashes.

    test_nginx.py PATH/TO/chring_owners
"""

import http.client
import os
import random
import sys

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
        except Exception:
            if os.path.exists(error_log):
                with open(error_log, errors="replace") as f:
                    print("nginx error.log:\n" + f.read()[-4000:])
            raise
        finally:
            self.procs.stop(process)


def run_scenario(nginx, helper, tally, tmp, label, servers, down, keys, backend_ports):
    """servers: [(id, weight)] in configuration order; down: set of positions."""
    lines = [upstream_line(sid, w, i in down) for i, (sid, w) in enumerate(servers)]
    replies = nginx.answers(nginx_config(tmp, nginx.front, lines, backend_ports), keys)
    position_of = {sid: i for i, (sid, _) in enumerate(servers)}
    real = [position_of[r] for r in replies]
    chring_list = [(sid, 0 if i in down else w) for i, (sid, w) in enumerate(servers)]
    ours = cs.chring_owners(helper, "nginx", chring_list, keys, tmp)
    print(f"{label}: " + ", ".join(f"{sid} w={w}{' down' if i in down else ''}"
                                   for i, (sid, w) in enumerate(servers)))
    tally.compare(label, keys, real, ours, lambda p: f"#{p} {servers[p][0]}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    helper = sys.argv[1]
    binary = cs.find_tool("nginx", also=("/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"))
    rng = random.Random(0x6E67696E78)
    front, *backend_ports = cs.free_ports(1 + SERVERS)
    servers = [(f"127.0.0.1:{p}", rng.choice((1, 1, 2, 3, 5))) for p in backend_ports]
    servers[0] = (servers[0][0], 4)  # at least one weight > 1 whatever the draw
    tally = cs.Tally()
    with cs.Processes() as procs, cs.temp_dir("chring-nginx-") as tmp:
        nginx = Nginx(binary, procs, tmp, front)

        def scenario(label, server_list, down=frozenset()):
            keys = [query_key(rng) for _ in range(KEYS_PER_SCENARIO)]
            run_scenario(nginx, helper, tally, tmp, label, server_list, down, keys, backend_ports)

        scenario("base", servers)
        scenario("one server down", servers, down={2})
        scenario("one server removed", servers[:4] + servers[5:])
        reweighted = list(servers)
        reweighted[1] = (reweighted[1][0], reweighted[1][1] + 3)
        scenario("one weight raised by 3", reweighted)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
