#!/usr/bin/env python3
"""The burst of test_etcd.py's `burst` case, in a process of its own.

    burst_driver.py --endpoint 127.0.0.1:PORT --total 10000 --clients 8 --seconds 10
                    [--cacert CA --cert CERT --key KEY] [--user NAME --password-file FILE]

CLIENTS threads, each owning a share of the ids test_etcd.py drives, make
TOTAL random changes in all, one transaction each, paced to TOTAL in
SECONDS (a client that falls behind goes on without pausing), over etcd's
gRPC API (python3-etcd3): half the CPU per transaction in etcd of the JSON
gateway, so the offered rate is reached on a small machine, and the
harness's own threads (timestamps of what the fleet reports) do not share
an interpreter lock with the driver. Each client's share of ids is its
own, so the final state is each one's last word.

With --cacert (etcdctl's flags), the clients speak TLS, presenting the
client certificate of --cert and --key; with --user, each authenticates
and sends its token with every call.

Prints one JSON object: {"changes": [[time sent (CLOCK_MONOTONIC, as
time.monotonic() in any process), revision, kind], ...], "failures": N}.
Exit status 0, 1 when it could not make every change within 2 minutes.
"""

import argparse
import json
import random
import sys
import threading
import time

sys.dont_write_bytecode = True
import etcd3  # noqa: E402  (python3-etcd3)
import grpc  # noqa: E402
from etcd3 import etcdrpc  # noqa: E402

import test_etcd  # noqa: E402  (the ids, the data model and the Driver)
from etcd_server import prefix_end  # noqa: E402


def _bytes(text):
    return text.encode() if isinstance(text, str) else text


class GrpcKV:
    """The calls test_etcd.Driver makes, over etcd's gRPC API."""

    errors = (grpc.RpcError, etcd3.exceptions.Etcd3Exception, OSError)

    def __init__(self, host, port, timeout=10, tls=None, user=None):
        """tls: (ca, cert, key) file names; user: (name, password)."""
        ca, cert, key = tls or (None, None, None)
        name, password = user or (None, None)
        self.client = etcd3.client(host=host, port=port, timeout=timeout, ca_cert=ca,
                                   cert_cert=cert, cert_key=key, user=name, password=password)
        self.timeout = timeout
        self.metadata = self.client.metadata  # the token, None without a user

    @staticmethod
    def op_put(key, value):
        return etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=_bytes(key),
                                                                value=_bytes(value)))

    @staticmethod
    def op_delete(key):
        return etcdrpc.RequestOp(request_delete_range=etcdrpc.DeleteRangeRequest(key=_bytes(key)))

    def txn(self, ops):
        r = self.client.kvstub.Txn(etcdrpc.TxnRequest(success=ops), self.timeout,
                                   metadata=self.metadata)
        return r.succeeded, r.header.revision

    def get_prefix(self, prefix):
        p = _bytes(prefix)
        r = self.client.kvstub.Range(etcdrpc.RangeRequest(key=p, range_end=prefix_end(p)),
                                     self.timeout, metadata=self.metadata)
        return {kv.key: kv.value for kv in r.kvs}, r.header.revision

    def reset(self):
        pass  # gRPC reconnects by itself

    def close(self):
        self.client.close()


def paced(driver, count, seconds, limit=120.0):
    """`count` changes spread over `seconds`, within `limit` seconds."""
    t0 = time.monotonic()
    made = 0
    for _ in range(count * 3):  # failed attempts included
        if made >= count or time.monotonic() > t0 + limit:
            break
        wait = t0 + made * seconds / count - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            driver.change()
            made += 1
        except RuntimeError:
            time.sleep(0.05)
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint", required=True, help="HOST:PORT of etcd's client port")
    parser.add_argument("--total", type=int, default=10000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=7000)
    parser.add_argument("--cacert", help="TLS: the CA of etcd's certificate")
    parser.add_argument("--cert", help="TLS: the client certificate")
    parser.add_argument("--key", help="TLS: the client certificate's key")
    parser.add_argument("--user", help="authenticate as this user")
    parser.add_argument("--password-file", help="the user's password: the file's first line")
    args = parser.parse_args()
    host, port = args.endpoint.rsplit(":", 1)
    tls = (args.cacert, args.cert, args.key) if args.cacert else None
    user = None
    if args.user:
        with open(args.password_file) as f:
            user = (args.user, f.readline().rstrip("\r\n"))

    ids = test_etcd.ids_pool()[:test_etcd.DRIVEN]
    drivers = []
    for c in range(args.clients):
        share = ids[c::args.clients]
        d = test_etcd.Driver(GrpcKV(host, int(port), tls=tls, user=user), share, random.Random(args.seed + c),
                             low=1, high=len(share))
        d.resync()
        drivers.append(d)
    per = args.total // args.clients
    made = [0] * len(drivers)

    def run(i):
        made[i] = paced(drivers[i], per, args.seconds)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(drivers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    changes = sorted(c for d in drivers for c in d.changes)
    json.dump({"changes": changes, "failures": sum(d.failures for d in drivers)}, sys.stdout)
    for d in drivers:
        d.close()
    return 0 if sum(made) == per * len(drivers) else 1


if __name__ == "__main__":
    sys.exit(main())
