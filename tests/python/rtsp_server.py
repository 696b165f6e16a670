"""A real RTSP server for the stream tests (GStreamer's gst-rtsp-server
through python3-gi): one live camera at rtsp://127.0.0.1:PORT/cam, raw
I420 320x240 at 15 fps over RTP. Started and killed by the test; prints
"ready" once it listens.

    /usr/bin/python3 rtsp_server.py PORT
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    port = sys.argv[1]
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch("( videotestsrc is-live=true pattern=ball ! "
                       "video/x-raw,format=I420,width=320,height=240,framerate=15/1 ! "
                       "rtpvrawpay name=pay0 pt=96 )")
    factory.set_shared(True)
    server.get_mount_points().add_factory("/cam", factory)
    if server.attach(None) == 0:
        print(f"cannot listen on 127.0.0.1:{port}", flush=True)
        sys.exit(1)
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
