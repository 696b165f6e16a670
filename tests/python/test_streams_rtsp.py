"""Three cameras on real RTSP servers (gst-rtsp-server on loopback, one
process each, started and stopped here) into one graph: a server killed
and started again, a server frozen with SIGSTOP. The other streams keep
their frame rate, the lost one is reported and comes back on its own,
frame numbers go on, and the accounting balances per stream."""
import os
import pathlib
import signal
import socket
import subprocess
import threading
import time

import pytest

import neat

try:
    import gi
    gi.require_version("GstRtspServer", "1.0")
    HAVE_RTSP_SERVER = True
except (ImportError, ValueError):
    HAVE_RTSP_SERVER = False
# Collected and skipped (not a module-level skip: pytest would find no test).
pytestmark = pytest.mark.skipif(
    not HAVE_RTSP_SERVER,
    reason="a real RTSP server needs gir1.2-gst-rtsp-server-1.0 and python3-gi")

SERVER = pathlib.Path(__file__).with_name("rtsp_server.py")
STALL = 1.0  # stall-timeout, seconds
BACKOFF_MIN = 0.25  # the first restart attempt's wait, seconds
BACKOFF_MAX = 1.0  # the longest wait between restart attempts, seconds
FPS = 15  # each camera's frame rate (rtsp_server.py)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port):
        self.port = port
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["/usr/bin/python3", str(SERVER), str(self.port)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


def camera(name, port):
    return (f'gst:"rtspsrc location=rtsp://127.0.0.1:{port}/cam protocols=tcp latency=0 '
            f'! rtpvrawdepay ! videoconvert ! video/x-raw,format=NV12" name={name} '
            f'stall-timeout={STALL}s backoff-min={BACKOFF_MIN}s backoff-max={BACKOFF_MAX}s ! all.')


@pytest.fixture
def servers():
    s = {name: Server(free_port()) for name in "abc"}
    for x in s.values():
        x.start()
    yield s
    for x in s.values():
        x.close()


class Arrivals:
    """Pulls every frame in a thread; keeps (time, stream, frame)."""

    def __init__(self, g):
        self.seen = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.pull, args=(g,), daemon=True)
        self.thread.start()

    def pull(self, g):
        for f in g.appsink:
            with self.lock:
                self.seen.append((time.monotonic(), f.stream, f.frame))

    def count(self, stream, t0, t1):
        with self.lock:
            return sum(1 for t, s, _ in self.seen if s == stream and t0 <= t < t1)

    def frames(self, stream):
        with self.lock:
            return [f for _, s, f in self.seen if s == stream]


def wait_for(g, stream, states, timeout):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        st = {s["name"]: s for s in g.stats()["streams"]}[stream]
        if st["state"] in states:
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError(f"stream {stream} not {states} within {timeout} s: {st}")


def test_a_lost_camera_is_reported_and_returns_while_the_others_keep_their_rate(servers):
    text = " ".join(camera(n, s.port) for n, s in servers.items())
    g = neat.pipeline(text + " resize name=all size=160x120 ! appsink capacity=8")
    assert "takes its 3 inputs in turn" in g.explain()
    # The waits are the text's: without them (0.5 s doubling to 30 s) an attempt
    # missed while the server starts under load is followed 4 s later.
    assert f"backoff {BACKOFF_MIN:g} s to {BACKOFF_MAX:g} s" in g.explain()
    g.start()
    got = Arrivals(g)
    for name in "abc":
        wait_for(g, name, {"up"}, 10)
    time.sleep(3.0)
    before = time.monotonic()
    servers["b"].kill()  # the camera goes away: no end of stream reaches us
    lost_after = wait_for(g, "b", {"stalled", "restarting"}, STALL + 5)
    time.sleep(3.0)
    during = time.monotonic()
    servers["b"].start()  # back on the same port
    back_after = wait_for(g, "b", {"up"}, BACKOFF_MAX + 10)
    time.sleep(1.0)
    g.stop()
    g.wait()
    got.thread.join(5)
    # Reported within the stall timeout (+1 s), back within the backoff (+2 s).
    assert lost_after <= STALL + 1.0, lost_after
    assert back_after <= BACKOFF_MAX + 2.0, back_after
    # The others kept their rate while b was away: frames in the 3 s before
    # the loss against the 3 s of it. The 3 s before may hold more than the
    # camera's rate (frames queued at the start arriving late: 49 seen at 15
    # fps), so the rate they are held to is at most the camera's.
    for name in "ac":
        normal = min(got.count(name, before - 3.0, before), 3 * FPS)
        outage = got.count(name, during - 3.0, during)
        assert outage >= 0.95 * normal - 1, (name, normal, outage)
    # b's frame numbers go on across the restart; the accounting balances.
    b = got.frames("b")
    assert b == sorted(b) and len(set(b)) == len(b)
    stats = {s["name"]: s for s in g.stats()["streams"]}
    assert stats["b"]["restarts"] >= 1 and stats["a"]["restarts"] == 0
    report = g.stats()["frames"]
    assert report["balanced"]
    for name in "abc":
        assert stats[name]["frames"] == len(got.frames(name)) + sum(
            n for r, n in stats[name]["dropped"].items() if r != "rate")


def test_a_frozen_server_is_a_stall_and_it_recovers_after_sigcont(servers):
    text = " ".join(camera(n, s.port) for n, s in servers.items())
    g = neat.pipeline(text + " appsink name=all capacity=8")
    g.start()
    got = Arrivals(g)
    for name in "abc":
        wait_for(g, name, {"up"}, 10)
    os.kill(servers["c"].proc.pid, signal.SIGSTOP)  # no error, no end of stream: silence
    stalled_after = wait_for(g, "c", {"stalled", "restarting"}, STALL + 5)
    assert stalled_after <= STALL + 1.0, stalled_after
    os.kill(servers["c"].proc.pid, signal.SIGCONT)
    wait_for(g, "c", {"up"}, 15)
    g.stop()
    g.wait()
    got.thread.join(5)
    assert g.stats()["frames"]["balanced"]
