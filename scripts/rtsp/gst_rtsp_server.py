#!/usr/bin/python3
"""argus's test RTSP server: GStreamer's gst-rtsp-server (Debian packages), driven from Python.

Started by scripts/rtsp-server.sh; run it with the Debian /usr/bin/python3 (it needs python3-gi
and gir1.2-gst-rtsp-server-1.0, which the script installs).

It serves rtsp://HOST:PORT/<path> for every publisher recorded in the state dir (--state):
  <key>.feed  line 1: path, 2: UDP feed port, 3: codec (h264 | hevc), 4: feed URL
  <key>.pid   the pid of the ffmpeg publisher that sends MPEG-TS to 127.0.0.1:<feed port>
The dir is polled every 200 ms. A path is mounted while its publisher process is alive; it
is unmounted when the publisher exits or is replaced (another pid, port or codec), and the
readers of that path are disconnected then (they see EOF and must reconnect); an unknown path
answers 404. A stopped (SIGSTOPped) publisher keeps its path mounted: readers stay connected
and get no packets, unless --read-timeout is set, after which the publisher is terminated.

Each mount is a shared media factory: one pipeline per path, built when the first reader
comes (DESCRIBE) and torn down after the last one leaves:
  udpsrc port=<feed port> ! tsdemux ! h264parse config-interval=-1 ! rtph264pay
(h265parse/rtph265pay for HEVC), so a reader that joins mid-stream gets SPS/PPS with every
key frame (and in the SDP) and starts decoding at the next key frame. Packets go to the
readers as they come (the RTP sinks do not sync on timestamps; ffmpeg -re paces the feed). Readers must use RTP over TCP (interleaved, e.g.
ffmpeg -rtsp_transport tcp); a reader that offers only UDP gets 461 and ffmpeg retries TCP.
"""

import argparse
import os
import re
import signal
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

POLL_MS = 200


def log(msg):
    sys.stderr.write("%s gst-rtsp-server: %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def parse_duration(s):
    """'0', '10', '10s', '1.5s', '500ms', '2m' -> seconds (float)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*", s or "0")
    if not m:
        raise argparse.ArgumentTypeError("bad duration %r" % s)
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2) or "s"]


# h26xparse puts SPS/PPS (and VPS) in front of every key frame, once per frame (alignment=au),
# so readers can join mid-stream. Not the payloader's config-interval: it inserts them before
# every key-frame slice, and decoders then see a frame of several slices (x264 -tune
# zerolatency) as several frames.
LAUNCH = {
    "h264": "h264parse config-interval=-1 ! video/x-h264,alignment=au ! rtph264pay name=pay0 pt=96",
    "hevc": "h265parse config-interval=-1 ! video/x-h265,alignment=au ! rtph265pay name=pay0 pt=96",
}


# every element the pipelines use, including the ones gst-rtsp-server adds itself
ELEMENTS = ["udpsrc", "tsdemux", "h264parse", "rtph264pay", "h265parse", "rtph265pay", "videotestsrc", "openh264enc",
            "rtpbin", "appsink", "appsrc", "funnel", "tee", "queue"]


class Factory(GstRtspServer.RTSPMediaFactory):
    """A shared media factory whose media key ignores the URL, so that every reader of the
    path (whatever URL spelling it uses) shares the one pipeline bound to the feed port."""

    def do_gen_key(self, url):
        return "feed"


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def proc_has_arg(pid, arg):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return arg.encode() in f.read().split(b"\0")
    except OSError:
        return False


def read_lines(fn):
    try:
        with open(fn) as f:
            return f.read().splitlines()
    except OSError:
        return None


class Server:
    def __init__(self, host, port, state, read_timeout):
        self.state = state
        self.read_timeout = read_timeout
        self.lock = threading.Lock()
        self.mounts = {}  # path -> (pid, port, codec)
        self.stopped_since = {}  # path -> monotonic time its publisher was first seen stopped
        self.dropped = {}  # path -> pid of a publisher dropped by --read-timeout
        self.server = GstRtspServer.RTSPServer()
        self.server.set_address(host)
        self.server.set_service(str(port))
        self.server.set_backlog(64)
        # one thread per client: a DESCRIBE that waits for a publisher's first key frame must
        # not hold up the other clients (the default pool runs all clients on one thread)
        pool = self.server.get_thread_pool()
        pool.set_max_threads(-1)
        self.server.connect("client-connected", self.on_client)

    # -- clients --------------------------------------------------------------------------

    def on_client(self, server, client):
        client.argus_paths = set()
        for sig in ("describe-request", "setup-request", "play-request"):
            client.connect(sig, self.on_request)

    def on_request(self, client, ctx):
        uri = ctx.uri
        if uri is not None and uri.abspath:
            with self.lock:
                client.argus_paths.add(uri.abspath.rstrip("/"))

    def disconnect_readers(self, path):
        prefix = "/" + path
        n = [0]

        def filt(server, client, *_):
            with self.lock:
                paths = set(getattr(client, "argus_paths", ()))
            if any(p == prefix or p.startswith(prefix + "/") for p in paths):
                n[0] += 1
                return GstRtspServer.RTSPFilterResult.REMOVE
            return GstRtspServer.RTSPFilterResult.KEEP

        self.server.client_filter(filt, None)
        if n[0]:
            log("disconnected %d reader(s) of '%s'" % (n[0], path))

    # -- mounts ---------------------------------------------------------------------------

    def mount_camera(self):
        """/argus-camera: a live test pattern encoded as it is captured (10 fps, H.264 without
        B-frames), whose RTCP sender reports map RTP time to the wall clock at capture, as a
        camera synchronised by NTP does (the publishers' paths map it to the time of sending,
        the pipeline's latency later). For argus's `producedBy: camera` stamps."""
        f = GstRtspServer.RTSPMediaFactory()
        f.set_launch(
            "( videotestsrc is-live=true pattern=ball ! video/x-raw,width=640,height=360,framerate=10/1 "
            "! openh264enc gop-size=10 ! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 )"
        )
        f.set_shared(True)
        f.set_protocols(GstRtsp.RTSPLowerTrans.TCP)
        f.connect("media-configure", self.on_camera_configure)
        self.server.get_mount_points().add_factory("/argus-camera", f)

    def on_camera_configure(self, factory, media):
        pipeline = media.get_element().get_parent()
        if pipeline is not None:
            pipeline.connect("deep-element-added", self.on_camera_element)

    @staticmethod
    def on_camera_element(pipeline, bin, element):
        fac = element.get_factory()
        if fac is not None and fac.get_name() == "rtpbin":
            element.set_property("rtcp-sync-send-time", False)

    def mount(self, path, pid, port, codec):
        f = Factory()
        f.set_launch(
            '( udpsrc name=feed address=127.0.0.1 port=%d reuse=true buffer-size=8388608 '
            'caps="video/mpegts, systemstream=(boolean)true, packetsize=(int)188" '
            "! tsdemux name=demux ! %s )" % (port, LAUNCH[codec])
        )
        f.set_shared(True)
        f.set_eos_shutdown(False)
        f.set_protocols(GstRtsp.RTSPLowerTrans.TCP)
        f.connect("media-configure", self.on_media_configure)
        self.server.get_mount_points().add_factory("/" + path, f)
        self.mounts[path] = (pid, port, codec)
        log("mounted '%s' (%s from udp://127.0.0.1:%d, publisher pid %d)" % (path, codec, port, pid))

    def on_media_configure(self, factory, media):
        pipeline = media.get_element().get_parent()
        if pipeline is not None:
            pipeline.connect("deep-element-added", self.on_element_added)

    @staticmethod
    def on_element_added(pipeline, bin, element):
        # The RTP sinks that feed the readers sync on buffer timestamps, and gst-rtsp-server
        # turns that on again after creating them. With B-frames (pts out of order) and
        # tsdemux's latency, syncing stalls the stream after every key frame and loses whole
        # GOPs. The feed is already paced by ffmpeg -re: forward packets as they come.
        fac = element.get_factory()
        if fac is not None and fac.get_name() in ("appsink", "multiudpsink"):
            element.set_property("sync", False)
            element.connect("notify::sync", Server.on_sync_changed)

    @staticmethod
    def on_sync_changed(element, _pspec):
        if element.get_property("sync"):
            element.set_property("sync", False)

    def unmount(self, path, why):
        self.server.get_mount_points().remove_factory("/" + path)
        del self.mounts[path]
        self.stopped_since.pop(path, None)
        log("unmounted '%s': %s" % (path, why))
        self.disconnect_readers(path)

    def scan(self):
        """path -> (pid, port, codec) of every recorded publisher that is alive."""
        live = {}
        try:
            names = os.listdir(self.state)
        except OSError:
            names = []
        for name in names:
            if not name.endswith(".feed"):
                continue
            key = name[: -len(".feed")]
            feed = read_lines(os.path.join(self.state, name))
            pidl = read_lines(os.path.join(self.state, key + ".pid"))
            if not feed or len(feed) < 4 or not pidl:
                continue
            path, port, codec, url = feed[:4]
            if codec not in LAUNCH or not port.isdigit() or not pidl[0].strip().isdigit():
                continue
            pid = int(pidl[0])
            st = proc_state(pid)
            if st is None or st in "ZX" or not proc_has_arg(pid, url):
                continue
            live[path] = (pid, int(port), codec, st)
        return live

    def poll(self):
        try:
            live = self.scan()
            for path in list(self.mounts):
                cur = live.get(path)
                if cur is None:
                    self.unmount(path, "its publisher is gone")
                elif cur[:3] != self.mounts[path]:
                    self.unmount(path, "its publisher was replaced")
            now = time.monotonic()
            for path, (pid, port, codec, st) in live.items():
                if self.dropped.get(path) == pid:
                    continue
                self.dropped.pop(path, None)
                if path not in self.mounts:
                    self.mount(path, pid, port, codec)
                if st == "T":
                    since = self.stopped_since.setdefault(path, now)
                    if self.read_timeout > 0 and now - since >= self.read_timeout:
                        log("publisher of '%s' (pid %d) sent nothing for %.1fs; dropping it"
                            % (path, pid, now - since))
                        for sig in (signal.SIGTERM, signal.SIGCONT):
                            try:
                                os.kill(pid, sig)
                            except OSError:
                                pass
                        self.unmount(path, "read timeout")
                        self.dropped[path] = pid  # not mounted again until it is replaced
                else:
                    self.stopped_since.pop(path, None)
        except Exception as e:  # keep serving whatever happens in one poll
            log("poll error: %r" % (e,))
        return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", help="HOST:PORT")
    ap.add_argument("--state", help="publishers dir of rtsp-server.sh")
    ap.add_argument("--read-timeout", type=parse_duration, default=0.0,
                    help="terminate a publisher stopped this long (0 = never)")
    ap.add_argument("--check", action="store_true",
                    help="only check that GStreamer has every element needed; exit 0 if so")
    a = ap.parse_args()
    Gst.init(None)
    if a.check:
        missing = [e for e in ELEMENTS if Gst.ElementFactory.find(e) is None]
        if missing:
            log("missing GStreamer elements: %s" % " ".join(missing))
            return 1
        print("ok: GStreamer %s, gst-rtsp-server, %s" % (Gst.version_string(), " ".join(ELEMENTS)))
        return 0
    if not a.listen or not a.state:
        ap.error("--listen and --state are required")
    host, _, port = a.listen.rpartition(":")
    s = Server(host, int(port), a.state, a.read_timeout)
    s.mount_camera()
    s.poll()
    if s.server.attach(None) == 0:
        log("cannot listen on %s" % a.listen)
        return 1
    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, sig, lambda *_: (loop.quit(), False)[1])
    GLib.timeout_add(POLL_MS, s.poll)
    log("listening on rtsp://%s (%s)" % (a.listen, Gst.version_string()))
    loop.run()
    log("shutting down")
    for path in list(s.mounts):
        s.unmount(path, "server shutting down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
