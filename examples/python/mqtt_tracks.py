"""Detections leave the process: a pipeline tracks the objects it detects and
publishes each frame's tracks to MQTT; a subscriber prints the tracks as they
start and end (docs/messages.md). CI runs it (ctest -R example.python).

    python3 examples/python/mqtt_tracks.py [--broker HOST:PORT]

Without --broker it starts a private mosquitto on loopback (Debian's
mosquitto package, its own config and port) and stops it at the end; the
subscriber is mosquitto_sub (mosquitto-clients)."""
import argparse
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import neat


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def private_broker():
    """A mosquitto of our own on loopback: (process, "127.0.0.1:PORT")."""
    port = free_port()
    folder = tempfile.mkdtemp(prefix="neat-mqtt-")
    conf = os.path.join(folder, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
    broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return broker, f"127.0.0.1:{port}"
        time.sleep(0.05)
    broker.kill()
    sys.exit("mosquitto did not start")


def subscribe(broker, topic):
    """mosquitto_sub printing "TOPIC PAYLOAD" lines into a queue."""
    host, port = broker.rsplit(":", 1)
    sub = subprocess.Popen(["mosquitto_sub", "-h", host, "-p", port, "-q", "1", "-v",
                            "-t", topic], stdout=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in sub.stdout], daemon=True).start()
    # Ready once it receives a probe of our own.
    for _ in range(100):
        subprocess.run(["mosquitto_pub", "-h", host, "-p", port, "-t", "cameras/probe/detections",
                        "-m", "{}"], check=True)
        try:
            if lines.get(timeout=0.1).startswith("cameras/probe/"):
                return sub, lines
        except queue.Empty:
            pass
    sys.exit("mosquitto_sub did not subscribe")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", help="HOST:PORT of an MQTT broker (default: a private one)")
    args = parser.parse_args()
    if not args.broker and not shutil.which("mosquitto_sub"):
        sys.exit("needs mosquitto and mosquitto-clients (apt install mosquitto mosquitto-clients)")
    broker_process, broker = (None, args.broker) if args.broker else private_broker()
    sub, lines = subscribe(broker, "cameras/+/detections")
    try:
        # [docs:mqtt]
        g = neat.pipeline(
            "default name=yard frames=60 pattern=ball ! preprocess fit=letterbox"
            " ! infer model=models:detector ! yolo conf=0.2 ! track"
            f" ! mqtt broker={broker} topic=cameras/{{stream}}/detections")
        report = g.run()                     # every message acknowledged, or an error
        print(report["deliveries"])          # queued, delivered, dropped, ...
        # [docs:end]
        frames, tracks = 0, set()
        deadline = time.monotonic() + 10
        while frames < 60 and time.monotonic() < deadline:
            try:
                topic, payload = lines.get(timeout=1).split(" ", 1)
            except queue.Empty:
                continue
            m = json.loads(payload)
            if m.get("schema") == "neat.track/1":
                print(f"{m['stream']} frame {m['frame']}: track {m['track']} {m['event']}s"
                      f" (class {m['class']}, box {m['box']})")
            elif m.get("schema") == "neat.detections/1":
                frames += 1
                tracks.update(d["track"] for d in m["detections"])
        print(f"{frames} frame messages, tracks seen: {sorted(tracks)}")
        assert frames == 60, frames
        assert report["deliveries"][0]["delivered"] == report["deliveries"][0]["queued"]
    finally:
        sub.terminate()
        sub.wait()
        if broker_process:
            broker_process.terminate()
            broker_process.wait()


if __name__ == "__main__":
    main()
