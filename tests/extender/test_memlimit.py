# SPDX-License-Identifier: Apache-2.0
"""Memory and time bounds of the extender (issue 12 item 2).

MemoryLimit: the extender under a real memory limit: a child memory
cgroup of the host's cgroup v1 hierarchy with memory.limit_in_bytes = 96 MiB.
Hostile bodies (small-object flood, deep nesting, a huge string, memory held
by a half-sent body, a trickled body) get 413/503/400 or are cut off at the
request deadline, the process stays alive (no OOM kill), and valid /filter
requests sent meanwhile are answered.

Needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (or
IOQOS_MEMCG_ROOT); skipped otherwise. Prints the peak memory
(memory.max_usage_in_bytes) under attack.
"""
import json
import os
import socket
import tempfile
import threading
import time
import unittest

import k8s
from extproc import Extender

MEMCG = os.environ.get("IOQOS_MEMCG_ROOT", "/sys/fs/cgroup/memory")
LIMIT = 96 << 20


def names(result):
    return [n["metadata"]["name"] for n in result["Nodes"]["items"]]


def usable():
    return os.geteuid() == 0 and os.path.exists(os.path.join(MEMCG, "memory.limit_in_bytes"))


def sanitized():
    """ASan's redzones and quarantine multiply the memory of each small
    allocation: the budget is calibrated for the real allocator."""
    from extproc import BIN
    with open(BIN, "rb") as f:
        return b"__asan_init" in f.read()


@unittest.skipUnless(usable(), "needs root and a cgroup v1 memory hierarchy at " + MEMCG)
@unittest.skipIf(sanitized(), "memory limits are meaningless under AddressSanitizer")
class MemoryLimit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cg = tempfile.mkdtemp(prefix="ioqos-test-", dir=MEMCG)
        with open(os.path.join(cls.cg, "memory.limit_in_bytes"), "w") as f:
            f.write(str(LIMIT))
        procs = os.path.join(cls.cg, "cgroup.procs")
        # the shell moves itself into the cgroup, then becomes the extender
        wrapper = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs]
        try:
            cls.ext = Extender("--request-deadline", "3", "--idle-timeout", "30", "--threads", "4",
                               "--max-connections-per-ip", "16", wrapper=wrapper)
        except BaseException:
            os.rmdir(cls.cg)  # tearDownClass does not run after a failed setUpClass
            raise
        cls.good = k8s.filter_args(k8s.ioqos_pod("db", bw=10),
                                   nodes=[k8s.node("n", [k8s.disk("sda", 100)])])

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.ext.stop()
        finally:
            cls.report_and_remove()
        assert rc == 0, "extender exit code %d" % rc

    @classmethod
    def report_and_remove(cls):
        with open(os.path.join(cls.cg, "memory.max_usage_in_bytes")) as f:
            peak = int(f.read())
        with open(os.path.join(cls.cg, "memory.failcnt")) as f:
            fails = int(f.read())
        print("\nmemory cgroup limit %d MiB: peak usage %.1f MiB, failcnt %d"
              % (LIMIT >> 20, peak / 1048576.0, fails))
        os.rmdir(cls.cg)

    def alive(self):
        self.assertIsNone(self.ext.proc.poll(), "the extender died:\n" + self.ext.log()[-3000:])

    def assert_served(self):
        st, res, _ = self.ext.post("filter", self.good)
        self.assertEqual(st, 200, res)
        self.assertIn("Nodes", res, "a valid filter was not served: %r" % (res,))
        self.assertEqual(names(res), ["n"])

    def test_budget_is_a_quarter_of_the_limit(self):
        m = self.ext.wait_log(r"parse budget bytes=(\d+) from=\"a quarter of the memory limit (\d+) of (\S+)\"")
        self.assertEqual(int(m.group(1)), LIMIT // 4)
        self.assertEqual(int(m.group(2)), LIMIT)
        self.assertIn(os.path.basename(self.cg), m.group(3))
        self.assertEqual(self.ext.metric("ioqos_extender_request_parse_memory_limit_bytes"), LIMIT // 4)

    def send_raw(self, body, chunk=1 << 16):
        """POST body over a raw socket; returns the reply's status line."""
        s = socket.create_connection(("127.0.0.1", self.ext.port), timeout=60)
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        try:
            for off in range(0, len(body), chunk):
                s.sendall(body[off:off + chunk])
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while b"\r\n" not in reply:
                d = s.recv(4096)
                if not d:
                    break
                reply += d
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        return reply.split(b"\r\n", 1)[0].decode(errors="replace")

    def test_adversarial_bodies_with_valid_filters_meanwhile(self):
        attacks = {
            # ~2 MB of [{},{},...] is ~530 MB of json-c tree (the OOM kill)
            # each alone is too big (413); while the others hold memory, 503
            "flood": (b'{"Pod":{},"NodeNames":[' + b"{}," * 700000 + b"{}]}", ("413", "503")),
            "deep": (b"[" * 5000 + b"]" * 5000, ("400", "503")),  # past the depth limit
            # 64 MiB of string: 128 MiB to parse (text twice) > 24 MiB budget
            "string": (b'{"Pod":"' + b"a" * (64 << 20) + b'"}', ("413", "503")),
            "members": (b"{" + b",".join(b'"k%x":0' % i for i in range(300000)) + b"}", ("413", "503")),
        }
        results = {}

        def attack(name, body):
            results[name] = self.send_raw(body)

        threads = [threading.Thread(target=attack, args=(n, b)) for n, (b, _) in attacks.items()]
        for t in threads:
            t.start()
        served = 0
        while any(t.is_alive() for t in threads):
            self.assert_served()
            served += 1
        for t in threads:
            t.join()
        for name, (_, want) in attacks.items():
            self.assertIn(results[name].split(" ")[1:2], [[w] for w in want],
                          "%s: %s" % (name, results[name]))
        self.assertGreater(served, 0)
        self.alive()
        self.assert_served()

    def test_memory_held_by_a_half_sent_body_gives_503(self):
        # A reserves ~15 MiB of the 24 MiB budget and stops sending
        a = socket.create_connection(("127.0.0.1", self.ext.port), timeout=30)
        part = b'{"Pod":{},"NodeNames":[' + b"{}," * 15000
        a.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 90000\r\n\r\n" + part)
        self.ext.wait_until(
            lambda: self.ext.metric("ioqos_extender_request_parse_memory_bytes") >= 15000 * 900,
            timeout=20, what="A's parse memory reserved")
        body_b = b'{"Pod":{},"NodeNames":[' + b"{}," * 15000 + b"{}]}"
        st, res, _ = self.ext.request("POST", "/filter", body_b)
        self.assertEqual(st, 503, res)
        self.assertIn("too many large requests in progress", res["Error"])
        self.assert_served()
        a.close()
        self.alive()



class Deadlines(unittest.TestCase):
    """A trickled body cannot hold its connection and memory past
    --request-deadline; one address cannot take every connection. No cgroup
    needed: these run everywhere, sanitizers included."""

    @classmethod
    def setUpClass(cls):
        cls.ext = Extender("--request-deadline", "3", "--idle-timeout", "30", "--threads", "4",
                           "--max-connections-per-ip", "16")
        cls.good = k8s.filter_args(k8s.ioqos_pod("db", bw=10),
                                   nodes=[k8s.node("n", [k8s.disk("sda", 100)])])

    @classmethod
    def tearDownClass(cls):
        rc = cls.ext.stop()
        assert rc == 0, "extender exit code %d" % rc

    alive = MemoryLimit.alive
    assert_served = MemoryLimit.assert_served

    def test_trickled_body_is_cut_off_at_the_deadline(self):
        # one byte every 0.5 s keeps the idle timeout (30 s) from ever firing;
        # --request-deadline 3 closes the connection and returns the memory
        s = socket.create_connection(("127.0.0.1", self.ext.port), timeout=30)
        start = time.monotonic()
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
                  b'{"Pod":{},"NodeNames":[' + b"{}," * 3000)
        closed = False
        while time.monotonic() - start < 25:
            try:
                s.sendall(b" ")
                s.settimeout(0.5)
                if s.recv(100) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        elapsed = time.monotonic() - start
        s.close()
        self.assertTrue(closed, "trickled connection still open after %.1f s" % elapsed)
        self.ext.wait_until(
            lambda: self.ext.metric("ioqos_extender_request_parse_memory_bytes") == 0,
            timeout=10, what="the trickled body's memory returned")
        self.assertGreaterEqual(
            self.ext.metric('ioqos_extender_rejected_requests_total{reason="deadline"}'), 1)
        print("\ntrickled body closed after %.1f s (--request-deadline 3)" % elapsed)
        self.alive()
        self.assert_served()

    def test_per_ip_connection_limit(self):
        # 16 idle connections from 127.0.0.2 use up that address's share; the
        # 17th is closed at once, while 127.0.0.1 (kube-scheduler) is served.
        # Each of the 16 is answered once (and kept open) before the 17th
        # connects: connect() returns when the kernel has queued the
        # connection, and the server's threads accept and count the queued
        # ones in no fixed order, so an unanswered one could be the one
        # refused (seen: 2 in 100 runs)
        held = []
        try:
            for _ in range(16):
                s = socket.socket()
                s.bind(("127.0.0.2", 0))
                s.settimeout(10)
                s.connect(("127.0.0.1", self.ext.port))
                held.append(s)
                body = json.dumps(self.good).encode()
                s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                got = s.recv(100)
                self.assertTrue(got.startswith(b"HTTP/1.1 200 "), "held connection not served: %r" % got)
            extra = socket.socket()
            extra.bind(("127.0.0.2", 0))
            extra.settimeout(10)
            extra.connect(("127.0.0.1", self.ext.port))
            try:
                extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                got = extra.recv(100)
            except ConnectionResetError:
                got = b""
            extra.close()
            self.assertEqual(got, b"", "17th connection from one address was served")
            self.assert_served()
        finally:
            for s in held:
                s.close()
        self.alive()


if __name__ == "__main__":
    unittest.main()
