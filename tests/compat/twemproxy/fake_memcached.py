"""Fake memcached backends for the twemproxy test: one asyncio process that
listens on every loopback port given on the command line and answers the
memcached text protocol `get <key>...` with each key's value set to the
port that answered, so the client learns which server twemproxy chose.

    fake_memcached.py PORT...

Prints "ready" on stdout once every port listens. Other commands get
"ERROR"; `quit` closes the connection."""

import asyncio
import sys


def handler(port):
    value = str(port).encode()

    async def serve(reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                words = line.split()
                if words[:1] in ([b"get"], [b"gets"]) and len(words) > 1:
                    reply = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(value), value)
                                     for k in words[1:])
                    writer.write(reply + b"END\r\n")
                elif words[:1] == [b"quit"]:
                    break
                else:
                    writer.write(b"ERROR\r\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    return serve


async def main(ports):
    servers = [await asyncio.start_server(handler(p), "127.0.0.1", p) for p in ports]
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main([int(p) for p in sys.argv[1:]]))
