import { connect, isIP, type Socket } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { checkServerIdentity, connect as tlsConnect, type TLSSocket } from 'node:tls';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { MAX_CA_BYTES, readSmallFile } from '../core/files.js';
import { checksCertificate, type CameraTls } from '../core/rtsp-relay.js';
import { fromWallClock, now } from '../core/clock.js';
import type { LogFn } from '../core/log.js';
import { RelayDoor, type PeerCheck } from './relay-door.js';
import { AuthRewriter, placeholderQuery, PLACEHOLDER_USERINFO, secretParams, swapSecrets, urlCredentials } from './rtsp-auth.js';
import { addressOf, credentialsGo, nextStep, relayTarget, startChain, type RedirectChain, type RelayTarget } from './relay-redirect.js';

/**
 * The camera's own clock for RTSP sources over TCP (`producedBy: camera`).
 *
 * ffmpeg reads a camera's RTCP sender reports (each maps an RTP timestamp to the camera's NTP
 * time) but passes the mapping on only as packet side data, which reaches neither the decoded
 * frames nor its log. So argus relays the RTSP connection itself: ffmpeg is pointed at a
 * listener of argus's on 127.0.0.1, and each byte is passed on unchanged in both directions
 * while argus reads, as they go by, the RTSP replies (the SDP's clock rate, the interleaved
 * channels, the PLAY reply's RTP-Info and range), the RTP headers of the video channel (each
 * access unit's timestamp and the moment its first packet arrived) and the RTCP sender reports.
 *
 * ffmpeg then runs without `-use_wallclock_as_timestamps`: a frame's pts is its RTP timestamp
 * counted as ffmpeg's RTP demuxer counts it (from RTP-Info's `rtptime`, else the first packet's,
 * unwrapped, plus the PLAY range's start), which `RtpClock` counts the same way, so each frame
 * time ffmpeg prints names the access unit it was decoded from, B-frames and dropped frames
 * included. The frame is then stamped with the camera's time for that RTP timestamp (from the
 * latest sender report) when it is plausible, else with the access unit's arrival.
 *
 * On the way to ffmpeg the relay also ends each H.264 and H.265 access unit as soon as its last
 * packet is in (UnitEnds), which takes a frame period off every frame's latency.
 */
export type ClockReading = { at: number; by: 'camera' | 'arrival' };

/** A camera's time this far after the packet's arrival is taken as the arrival (clocks synchronised to a few ms). */
export const CAMERA_AHEAD_SLACK_MS = 5;
/**
 * A camera's time further than this before the packet's arrival is not believed (a camera clock
 * that is wrong by more than an encoder and a network could delay a frame): the arrival is used.
 */
export const CAMERA_BEHIND_MAX_MS = 10_000;
/**
 * A believed camera time further than this before the packet's arrival, for every frame that
 * arrives over CAMERA_BEHIND_SUSTAINED_MS, is said once in the log (RtpClock.believedBehind):
 * more than an encoder and a LAN usually take, and what a camera clock that is not synchronised
 * would show. Its frames' latency then counts it, and nothing else says so.
 */
export const CAMERA_BEHIND_NOTICE_MS = 1000;
/**
 * How long (ms of arrival time) every frame must be more than CAMERA_BEHIND_NOTICE_MS behind for
 * the notice: a clock that is off keeps every frame behind; a network stall delays the frames
 * sent during it, which then arrive together, and the frames after them on time again. One stall
 * of 1.2 s gave the notice, as if the camera's clock were 1.2 s off.
 */
export const CAMERA_BEHIND_SUSTAINED_MS = 5000;
/** Frames in that run at the least. */
const CAMERA_BEHIND_MIN_FRAMES = 5;
/**
 * Two sender reports of one stream map RTP time to the camera's clock alike within this many ms
 * (plus a frame interval and SR_RATE_SLACK of the time between them); further apart, the
 * camera's clock jumped (an NTP step) or its RTP clock does not run at the rate the SDP gives, and
 * neither report's time is believed for the rest of the connection (RtpClock.clockJump).
 */
export const SR_AGREEMENT_MS = 500;
/** A step between two access units' RTP timestamps longer than this is a pause, not a frame interval (SR_AGREEMENT_MS). */
const MAX_FRAME_GAP_MS = 5000;
/** Steps between access units whose median is the frame interval (RtpClock.frameSteps). */
const FRAME_STEPS = 32;
/** The part of the time between two sender reports their mappings may differ by beyond SR_AGREEMENT_MS (clock drift). */
export const SR_RATE_SLACK = 0.01;
/** Access units remembered for pairing with frames (a frame is decoded within a few of its arrival). */
const MAX_UNITS = 512;
/** An RTSP message head longer than this is not RTSP: the reader gives up (the relay goes on). */
const MAX_HEAD = 64 * 1024;
/** An RTSP message body (an SDP) longer than this is not read (the relay goes on). */
const MAX_BODY = 1024 * 1024;
/** The most bytes of an interleaved packet kept for reading (RTP header with CSRCs and an extension, the payload's first NAL headers, an RTCP sender report). */
const KEEP = 64;
/** Seconds between the NTP epoch (1900) and the Unix epoch (1970). */
const NTP_UNIX_S = 2_208_988_800;

interface Unit {
  /** The 32-bit RTP timestamp. */
  ts: number;
  /** Epoch ms when its first packet reached argus. */
  arrival: number;
  /** A frame was stamped from it. */
  used?: boolean;
  /** Its place in the order units came (0, 1, …). */
  n: number;
  /** Not a unit: the frame found by it has none (RtpClock.delimiterCut). */
  none?: boolean;
}

/**
 * What argus knows of one RTSP session's video clock, from the messages and packets relayed.
 * Pure: fed by `RtspTap` (or a test) with `request`, `response` and `packet`.
 */
export class RtpClock {
  clockRate = 90000;
  /** The video stream's payload type and encoding (from the DESCRIBE reply's SDP). */
  video: { pt: number; encoding?: string; donl?: boolean } | undefined;
  /** The interleaved channel of the video's RTP packets (from the SETUP reply), or -1. */
  rtpChannel = -1;
  private rtcpChannel = -1;
  private setups = 0;
  private setupUrl: string | undefined;
  private pending: { method: string; url: string } | undefined;
  /** ffmpeg's `base_timestamp`: 0 is "not set" (rtpdec.c). */
  private base = 0;
  private rangeOffset = 0;
  /** ffmpeg's `timestamp`, the last packet's (0 is "none yet", as for ffmpeg). */
  private lastTs = 0;
  private unwrapped = 0;
  private lastKey: number | undefined;
  /** Whether the last RTP packet had the marker bit (the last of its access unit), and access units that repeated a timestamp. */
  private marker = false;
  private repeats = 0;
  private readonly units = new Map<number, Unit>();
  /** The latest sender report: its time on argus's clock (`ntpMs`), as the camera sent it (`cameraMs`), and its RTP time. */
  private sr: { ntpMs: number; cameraMs: number; ts: number } | undefined;
  private firstSr = true;
  /** The SSRC of the stream's latest RTP packet: only its sender reports map its timestamps. */
  private ssrc: number | undefined;
  private packets = 0;
  /** Why frames cannot be paired with packets (set once), or undefined. */
  unpairable: string | undefined;
  /** How far ahead (+) or behind (−) the camera's time was of the arrival when it was first not believed, ms. */
  rejectedOffset: number | undefined;
  /**
   * How far behind the arrival (−, ms) the camera's time was at the least, over the first run of
   * frames arriving for CAMERA_BEHIND_SUSTAINED_MS that were all believed more than
   * CAMERA_BEHIND_NOTICE_MS before it (the camera clock's offset, near enough).
   */
  believedBehind: number | undefined;
  /** The run of frames behind by more than CAMERA_BEHIND_NOTICE_MS so far: the first one's arrival, and the least any was behind (−, ms). */
  private behindSince: number | undefined;
  private behindLeast = -Infinity;
  private behindFrames = 0;
  /**
   * How far (ms) a sender report's time was from the time the one before it gives its RTP
   * timestamp, when the two disagreed (SR_AGREEMENT_MS): the camera's clock jumped, or its RTP
   * clock runs at another rate. Its time is then not believed for the rest of the connection.
   */
  clockJump: number | undefined;
  /**
   * Why the relay stopped ending the camera's access units for ffmpeg on this connection
   * (UnitEnds), once it did: `marks`, a marked packet was followed by one with its timestamp;
   * `reordered`, by one with an earlier timestamp (B-frames, or a step back of the camera's clock
   * within UNIT_JUMP_BACK_MS). Each frame then waits a frame period in ffmpeg's parser.
   */
  unitEndsStopped: 'marks' | 'reordered' | undefined;
  /**
   * The last FRAME_STEPS steps between two access units' RTP timestamps (each at most
   * MAX_FRAME_GAP_MS), a ring: their median is the camera's frame interval. The longest step ever
   * seen was taken before: one burst of lost frames (4 s at 25 fps) made it 4 s for the rest of
   * the connection, and a 3 s step of the camera's clock was then believed.
   */
  private readonly frameSteps: number[] = [];
  private frameStepAt = 0;
  /** Frame times in a row that named no access unit (or one already used). */
  private missedInARow = 0;
  /** The key ffmpeg counts for a delimiter the relay sent after the last unit (see UnitEnds), until the next unit comes. */
  private delimiterKey: number | undefined;
  /**
   * Units whose frames ffmpeg counts under a delimiter's key other than their own (a guess that
   * was wrong), in the order they came: two guesses can name one key (a camera that skipped a
   * frame: the spacing doubled once), and a guess can be a later unit's own key.
   */
  private readonly guessed = new Map<number, Unit[]>();
  private unitCount = 0;
  /** The `n` of the last unit a frame was found by through a guess: frames come in unit order while delimiters are sent. */
  private lastGuessedN = -1;

  /** A request from ffmpeg to the camera (its first line and headers). ffmpeg waits for each reply before its next request. */
  request(head: string): void {
    const m = /^([A-Z_]+)\s+(\S+)\s+RTSP\//.exec(head);
    if (m) this.pending = { method: m[1], url: m[2] };
  }

  /** A reply from the camera: its head (status line and headers) and body. */
  response(head: string, body: Buffer): void {
    if (!/^RTSP\/\d\.\d\s+2\d\d/.test(head)) return;
    const method = this.pending?.method;
    const type = header(head, 'content-type');
    if (method === 'DESCRIBE' && body.length && type && /application\/sdp/i.test(type)) {
      const video = videoStream(body.toString('latin1'));
      this.video = video && { pt: video.pt, encoding: video.encoding, donl: video.donl };
      this.clockRate = video?.clockRate ?? this.clockRate;
    }
    if (method === 'SETUP') {
      const interleaved = /interleaved=(\d+)(?:-(\d+))?/i.exec(header(head, 'transport') ?? '');
      this.setups++;
      if (this.setups > 1) this.unpairable ??= 'the camera set up more than one stream';
      if (!interleaved) this.unpairable ??= 'the camera did not interleave the stream in the connection';
      else {
        this.rtpChannel = Number(interleaved[1]);
        this.rtcpChannel = interleaved[2] !== undefined ? Number(interleaved[2]) : this.rtpChannel + 1;
        if (this.rtcpChannel === this.rtpChannel) this.unpairable ??= 'the camera sends RTP and RTCP on one channel';
        this.setupUrl = this.pending?.url;
      }
    }
    if (method === 'PLAY' && this.packets === 0) {
      // ffmpeg takes `rtptime` of the entry whose url is its SETUP's, exactly (rtsp.c, handle_rtp_info),
      // and counts pts from the range's start (rtsp_read_play, range_start_offset).
      for (const entry of (header(head, 'rtp-info') ?? '').split(',')) {
        const url = /(?:^|;)\s*url=([^;]+)/i.exec(entry.trim())?.[1]?.trim();
        const rtptime = /(?:^|;)\s*rtptime=(\d+)/i.exec(entry.trim())?.[1];
        if (url !== undefined && url === this.setupUrl && rtptime !== undefined && Number(rtptime) % 2 ** 32 !== 0) this.base = Number(rtptime) % 2 ** 32;
      }
      const start = nptStart(header(head, 'range') ?? '');
      if (start !== undefined) this.rangeOffset = Math.round((start * this.clockRate) / 1e6);
    }
  }

  /** The camera's frame interval in RTP ticks: the median of the recent steps between access units (0 before any). */
  private frameInterval(): number {
    if (this.frameSteps.length === 0) return 0;
    const sorted = [...this.frameSteps].sort((a, b) => a - b);
    return sorted[sorted.length >> 1];
  }

  /** An interleaved packet from the camera (its first bytes), received at `at` (epoch ms). */
  packet(channel: number, p: Buffer, length: number, at: number): void {
    if (channel === this.rtpChannel && length >= 12 && p.length >= 12 && p[0] >> 6 === 2) {
      this.packets++;
      const ts = p.readUInt32BE(4);
      const ssrc = p.readUInt32BE(8);
      if (ssrc !== this.ssrc) {
        // A new stream (a camera's encoder restarted): the old reports do not map its timestamps.
        if (this.ssrc !== undefined) this.sr = undefined;
        this.ssrc = ssrc;
      }
      // The count of ffmpeg's RTP demuxer (rtpdec.c, finalize_packet), 0 meaning "unset" as there.
      // A first timestamp of 0 with no base is counted twice there (the next access unit gets
      // pts 0 too), and the decoder's guess of correct pts then shifts the frames' times by one
      // access unit, which the relay cannot follow.
      if (!this.base && !this.lastTs && ts === 0) this.unpairable ??= 'its first RTP timestamp is 0, which ffmpeg counts twice';
      if (!this.base) this.base = ts;
      if (!this.lastTs) this.unwrapped += ts;
      else {
        const step = (ts - this.lastTs) | 0;
        this.unwrapped += step;
        // A frame interval, up to MAX_FRAME_GAP_MS (a stall is not a frame interval).
        if (step > 0 && step <= (MAX_FRAME_GAP_MS * this.clockRate) / 1000) {
          this.frameSteps[this.frameStepAt] = step;
          this.frameStepAt = (this.frameStepAt + 1) % FRAME_STEPS;
        }
      }
      this.lastTs = ts;
      // Modulo 2^32: libavformat adds 2^32 to a pts that jumps far back (its wrap correction).
      const key = mod32(this.unwrapped + this.rangeOffset - this.base);
      const ended = this.marker;
      this.marker = (p[1] & 0x80) !== 0;
      if (key === this.lastKey) {
        // Another packet of the same access unit; after one marked as its last, a new access
        // unit with the same timestamp: a camera whose frames no timestamp tells apart.
        if (ended && ++this.repeats >= 2) this.unpairable ??= 'its RTP timestamps do not advance';
        return;
      }
      this.lastKey = key;
      // A timestamp seen before (a camera that repeats them) is a new access unit now.
      const unit: Unit = { ts, arrival: at, n: this.unitCount++ };
      this.units.delete(key);
      this.units.set(key, unit);
      // The frame that starts with a delimiter has the delimiter's pts, a guess of this unit's.
      if (this.delimiterKey !== undefined && this.delimiterKey !== key) {
        const list = this.guessed.get(this.delimiterKey);
        if (list) list.push(unit);
        else this.guessed.set(this.delimiterKey, [unit]);
        if (this.guessed.size > MAX_UNITS) this.guessed.delete(this.guessed.keys().next().value as number);
      }
      this.delimiterKey = undefined;
      while (this.units.size > MAX_UNITS) this.units.delete(this.units.keys().next().value as number);
    } else if (channel === this.rtcpChannel) {
      // A compound RTCP packet: the sender report, if any, comes first.
      if (p.length >= 20 && p[0] >> 6 === 2 && p[1] === 200) {
        const ssrc = p.readUInt32BE(4);
        const ts = p.readUInt32BE(16);
        // ffmpeg takes the first report's RTP time as the base when none is set yet (rtcp_parse_packet).
        if (this.firstSr) {
          this.firstSr = false;
          if (!this.base) this.base = ts;
        }
        const cameraMs = (p.readUInt32BE(8) - NTP_UNIX_S) * 1000 + (p.readUInt32BE(12) / 2 ** 32) * 1000;
        // On argus's clock, as the packets' arrival is (the system's may have been stepped since it started).
        const ntpMs = fromWallClock(cameraMs);
        if (this.ssrc === undefined) this.ssrc = ssrc;
        if (ssrc === this.ssrc) {
          // The report before maps this one's RTP time to (about) the same camera time, unless the
          // camera's clock jumped (a 5 s step back was believed: 5 s of latency that never was)
          // or its RTP clock runs at another rate than the SDP's (stamps off by a growing amount
          // between reports).
          // Compared on the camera's own time: converted to argus's, a step of the system's clock
          // between the two (an NTP step) read as a jump of the camera's, which had not moved.
          const before = this.sr;
          if (before && this.clockJump === undefined) {
            const off = cameraMs - (before.cameraMs + (((ts - before.ts) | 0) * 1000) / this.clockRate);
            // A camera may give its last frame's RTP time instead of the report's own: up to a
            // frame interval off, more than SR_AGREEMENT_MS at 1 fps or less.
            const frameMs = (this.frameInterval() * 1000) / this.clockRate;
            if (Math.abs(off) > SR_AGREEMENT_MS + frameMs + SR_RATE_SLACK * Math.abs(cameraMs - before.cameraMs)) this.clockJump = off;
          }
          this.sr = { ntpMs, cameraMs, ts };
        }
      }
    }
  }

  /**
   * The relay sent ffmpeg a delimiter with RTP timestamp `next` after the last packet (whose
   * timestamp was `last`), or (undefined) the one it sent is not to be counted: ffmpeg gives the
   * next frame the delimiter's pts, so the next access unit is also found by that.
   */
  delimit(last: number, next?: number): void {
    this.delimiterKey = next === undefined || this.lastKey === undefined ? undefined : mod32(this.lastKey + ((next - last) | 0));
  }

  /**
   * The delimiter sent after the last unit cut it (its packets went on with its timestamp): the
   * frame ffmpeg makes of its rest has the delimiter's pts and no unit; the next frame printed
   * with that pts finds nothing, instead of the next unit whose own key it may be.
   */
  delimiterCut(): void {
    if (this.delimiterKey === undefined) return;
    const list = this.guessed.get(this.delimiterKey);
    // Between the cut unit and the next in order, so it ages out as the units do.
    const none: Unit = { ts: 0, arrival: 0, n: this.unitCount - 0.5, none: true };
    if (list) list.push(none);
    else this.guessed.set(this.delimiterKey, [none]);
    this.delimiterKey = undefined;
  }

  /**
   * The time a frame whose pts ffmpeg printed as `us` (microseconds, its RTP timestamp counted
   * as above) was produced: the camera's, or the arrival of its first packet; undefined when no
   * access unit has that timestamp.
   */
  lookup(us: number): ClockReading | undefined {
    if (this.unpairable) return undefined;
    const key = mod32(Math.round((us * this.clockRate) / 1e6));
    // A unit given this key by a delimiter comes first, the oldest not yet used (frames come out
    // in the order their units came while delimiters are sent: no B-frames); else the unit whose
    // own key it is.
    const unit = this.guessedUnit(key) ?? this.guessedUnit(mod32(key - 1)) ?? this.guessedUnit(mod32(key + 1)) ?? this.units.get(key) ?? this.units.get(mod32(key - 1)) ?? this.units.get(mod32(key + 1));
    if (!unit || unit.none) {
      if (unit) unit.used = true;
      this.missedInARow++;
      return undefined;
    }
    if (unit.used) {
      // A second frame with this timestamp: not this unit's (a camera repeating timestamps).
      this.missedInARow++;
      return undefined;
    }
    unit.used = true;
    this.missedInARow = 0;
    if (this.sr && this.clockJump === undefined) {
      const camera = this.sr.ntpMs + (((unit.ts - this.sr.ts) | 0) * 1000) / this.clockRate;
      const ahead = camera - unit.arrival;
      if (ahead <= CAMERA_AHEAD_SLACK_MS && ahead >= -CAMERA_BEHIND_MAX_MS) {
        this.noteBehind(ahead, unit.arrival);
        return { at: Math.min(camera, unit.arrival), by: 'camera' };
      }
      this.rejectedOffset ??= ahead;
    }
    return { at: unit.arrival, by: 'arrival' };
  }

  /** A believed frame `ahead` ms (−: behind) of its arrival at `arrival`: a run of frames all far behind for long enough sets believedBehind. */
  private noteBehind(ahead: number, arrival: number): void {
    if (this.believedBehind !== undefined) return;
    if (ahead >= -CAMERA_BEHIND_NOTICE_MS) {
      this.behindSince = undefined;
      return;
    }
    if (this.behindSince === undefined) {
      this.behindSince = arrival;
      this.behindLeast = ahead;
      this.behindFrames = 0;
    } else this.behindLeast = Math.max(this.behindLeast, ahead);
    // Frames, not two alone 5 s apart (a camera that sent nothing between them).
    if (++this.behindFrames >= CAMERA_BEHIND_MIN_FRAMES && arrival - this.behindSince >= CAMERA_BEHIND_SUSTAINED_MS) this.believedBehind = this.behindLeast;
  }

  /**
   * The oldest unit not yet used that a delimiter gave `key`. Used ones are dropped on the way,
   * and so are units that came before the last one found by a guess: frames come in the order of
   * their units while delimiters are sent, so theirs were never printed (dropped by the `fps`
   * sampling or the decoder), and must not take a later frame with that pts.
   */
  private guessedUnit(key: number): Unit | undefined {
    const list = this.guessed.get(key);
    if (!list) return undefined;
    while (list.length && (list[0].used || list[0].n < this.lastGuessedN)) list.shift();
    if (!list.length) this.guessed.delete(key);
    const unit = list[0];
    if (unit && !unit.none) this.lastGuessedN = unit.n;
    return unit;
  }

  /**
   * Why the relay is of no use for this connection's frames, or undefined: a session it cannot
   * follow, or frame times it cannot find (none of the first MISS_LIMIT, or MISS_LIMIT in a row
   * later): ffmpegSource then runs the source without it (frames stamped with their arrival at ffmpeg).
   */
  failure(): string | undefined {
    if (this.unpairable) return this.unpairable;
    if (this.missedInARow >= MISS_LIMIT) return `${this.missedInARow} frames in a row could not be paired with its packets`;
    return undefined;
  }
}

/** Frames in a row whose time names no access unit before the relay is given up (see RtpClock.failure). */
export const MISS_LIMIT = 5;

/**
 * Access units in a row whose marked last packet must be followed by the next unit's timestamp
 * before the relay ends units for ffmpeg (see UnitEnds).
 */
export const UNIT_END_TRUST = 3;

/**
 * A step back between two access units' timestamps longer than this (ms) is the camera's clock
 * jumping back (an NTP step, an RTP counter restarted), not B-frames: their units come out of
 * order by a few frame periods at most (H.264 and H.265 reorder at most 16 frames). UnitEnds
 * then counts UNIT_END_TRUST units again, and goes on ending them.
 */
export const UNIT_JUMP_BACK_MS = 10_000;

/** An access unit delimiter NAL unit: H.264 (type 9, any picture type) and H.265 (type 35, temporal id 0, pictures of any slice type). */
const AUD: Record<string, Buffer> = { H264: Buffer.from([0x09, 0xf0]), H265: Buffer.from([0x46, 0x01, 0x50]) };

/**
 * Ends each H.264 or H.265 access unit for ffmpeg as soon as its last packet is in.
 *
 * ffmpeg 5.1's RTP demuxer passes every NAL unit on as it comes and leaves finding where a frame
 * ends to the H.264/H.265 parser, which knows it only when the next frame's first NAL unit
 * arrives: every frame of an RTSP camera waited a frame period in ffmpeg before it was decoded
 * (100 ms at 10 fps: the frame came out 102 ms after its own last packet; 2 ms with this). The
 * camera's RTP marker bit says where a unit ends (RFC 6184 and 7798: set on its last packet), so
 * after a marked packet the relay sends ffmpeg one more RTP packet of its own: an access unit
 * delimiter, the NAL unit a frame may begin with, which the parser takes as the next frame's
 * start, and so hands on the frame at once.
 *
 * The parser gives the next frame the pts of the packet it starts in, the delimiter's, so the
 * delimiter carries the next unit's timestamp as the spacing predicts it (the smaller of the
 * last two spacings, at most 200 ms: exact at a constant frame rate of 5 fps or more, and one
 * skipped frame does not double it; at least half a spacing after the last guess; RtpClock.delimit finds the next unit by the
 * guess, which ffmpeg then counts for it). It
 * copies the marked packet's sequence number (a duplicate, which ffmpeg accepts) and SSRC.
 * Delimiters are only sent after a marked packet that can end a unit (endsSlice), once
 * UNIT_END_TRUST units in a row were ended by their marker (the next packet had a later
 * timestamp), and never again on that connection after a marked packet followed by one with
 * the same timestamp (a camera that marks packets inside a unit, or repeats timestamps: a
 * delimiter would cut a frame in two) or an earlier one (B-frames: units come out of timestamp
 * order, and no guess of the next is right), unless more than UNIT_JUMP_BACK_MS earlier (the
 * camera's clock jumped back: trusted again after UNIT_END_TRUST units on the new timeline). Not knowable in time: a camera that marks a
 * complete slice inside a multi-slice frame after its markers were right gets that frame cut in
 * two (decoded damaged up to the next key frame; delimiterCut keeps the rest's frame unstamped
 * once a slice comes in it),
 * and one that starts B-frames mid-stream can have the frames around the switch stamped from a
 * nearby unit.
 */
export class UnitEnds {
  private inARow = 0;
  private off = false;
  /** The timestamp of a unit a delimiter cut (its packets went on after it), while its packets come. */
  private cutTs: number | undefined;
  /** The timestamp of the last packet when it was marked, else undefined. */
  private markedTs: number | undefined;
  /** The timestamp of the marked unit before, and the spacing between it and the one before it (0: none yet). */
  private previousTs: number | undefined;
  private previousStep = 0;
  /** The last delimiter's timestamp: the next is later (a frame that came early makes a smaller guess). */
  private lastNext: number | undefined;

  constructor(private readonly clock: RtpClock) {}

  /** After the camera's packet on `channel` (its first bytes `p`, `length` in all): the bytes to send ffmpeg next, or undefined. */
  after(channel: number, p: Buffer, length: number): Buffer | undefined {
    const video = this.clock.video;
    if (channel !== this.clock.rtpChannel || !video || length < 12 || p.length < 12 || p[0] >> 6 !== 2 || (p[1] & 0x7f) !== video.pt) return undefined;
    const ts = p.readUInt32BE(4);
    if (this.cutTs !== undefined) {
      if (ts === this.cutTs) return this.rest(video.encoding!, p, length);
      this.cutTs = undefined;
    }
    if (this.off) return undefined;
    const aud = video.encoding === undefined || video.donl ? undefined : AUD[video.encoding];
    if (!aud) return undefined;
    if (this.markedTs !== undefined) {
      const step = (ts - this.markedTs) | 0;
      if (step < -(this.clock.clockRate * UNIT_JUMP_BACK_MS) / 1000) {
        // The camera's clock jumped back: its units from here on are ended as before, once
        // UNIT_END_TRUST of them were ended by their marker on the new timeline (turned off for
        // good, each frame waited a frame period in ffmpeg for the rest of the connection).
        this.inARow = 0;
        this.markedTs = this.previousTs = this.lastNext = undefined;
        this.previousStep = 0;
      } else if (step <= 0) {
        this.off = true;
        this.clock.unitEndsStopped = step === 0 ? 'marks' : 'reordered';
        // The same timestamp: the unit goes on after its "last" packet (see cutTs). An earlier one
        // (B-frames): the delimiter began this unit's frame, which the clock finds by its guess.
        if (step === 0) {
          this.cutTs = ts;
          return this.rest(video.encoding!, p, length);
        }
        return undefined;
      } else {
        this.inARow++;
        if (this.previousTs !== undefined) this.previousStep = (this.markedTs - this.previousTs) | 0;
        this.previousTs = this.markedTs;
        this.markedTs = undefined;
      }
    }
    if (!(p[1] & 0x80)) return undefined;
    this.markedTs = ts;
    if (this.inARow < UNIT_END_TRUST || !endsSlice(video.encoding!, p, length)) return undefined;
    // The smaller of the last two spacings: one frame the camera skipped doubles a spacing once.
    const last = this.previousTs === undefined ? 0 : (ts - this.previousTs) | 0;
    // At most 200 ms (exact at 5 fps and above): a slow camera's frames are then found by a guess
    // that comes early, and when its rate rises the first guess overshoots by 200 ms at most.
    const step = Math.min(last, this.previousStep || last, Math.round(this.clock.clockRate / 5));
    if (step <= 0) return undefined;
    let next = (ts + step) >>> 0;
    // Guesses go forward by at least half a step: an earlier one would give a frame a pts below
    // the last frame's, which ffmpeg's decoder re-times where the stream allows reordering; one
    // tick forward would put the frames after a rise in frame rate (the first guess then
    // overshoots by a slow period) within a millisecond, and the fps sampling would keep one.
    const least = this.lastNext === undefined ? undefined : (this.lastNext + Math.max(1, step >> 1)) >>> 0;
    if (least !== undefined && ((next - least) | 0) < 0) next = least;
    this.lastNext = next;
    const out = Buffer.alloc(4 + 12 + aud.length);
    out[0] = 0x24;
    out[1] = channel;
    out.writeUInt16BE(12 + aud.length, 2);
    out[4] = 0x80; // version 2, no padding, extension or CSRC
    out[5] = video.pt; // no marker
    p.copy(out, 6, 2, 4); // sequence number
    out.writeUInt32BE(next, 8);
    p.copy(out, 12, 8, 12); // SSRC
    aud.copy(out, 16);
    this.clock.delimit(ts, next);
    return out;
  }

  /**
   * A packet of the rest of a unit a delimiter cut: once a slice comes in it, ffmpeg makes a frame
   * of the rest (with the delimiter's pts), which no unit is to be found by. A rest of no slice
   * (filler) makes none: the delimiter then begins the next unit's frame, found by the guess.
   */
  private rest(encoding: string, p: Buffer, length: number): undefined {
    if (startsSlice(encoding, p, length)) {
      this.clock.delimiterCut();
      this.cutTs = undefined;
    }
    return undefined;
  }
}

/** The offset of an RTP packet's payload (after CSRCs and a header extension), or undefined when it is beyond `p`. */
function payloadAt(p: Buffer): number | undefined {
  let at = 12 + 4 * (p[0] & 0x0f);
  if (p[0] & 0x10) {
    if (p.length < at + 4) return undefined;
    at += 4 + 4 * p.readUInt16BE(at + 2);
  }
  return at < p.length ? at : undefined;
}

/** NAL unit types: a slice (VCL), and one that may close an access unit after its slices. */
const NAL = {
  H264: { header: 1, type: (b: number) => b & 0x1f, slice: (t: number) => t >= 1 && t <= 5, closing: (t: number) => t >= 10 && t <= 12, aggregate: 24, fragment: 28 },
  H265: { header: 2, type: (b: number) => (b >> 1) & 0x3f, slice: (t: number) => t <= 31, closing: (t: number) => (t >= 36 && t <= 38) || t === 40, aggregate: 48, fragment: 49 },
} as const;

/**
 * What an RTP packet's payload (its first bytes) holds: the NAL types of a single NAL unit, of
 * an aggregate's units (as far as the bytes kept go), or of a fragment's unit with whether it is
 * the fragment that starts or ends it.
 */
function payloadNals(encoding: string, p: Buffer, length: number): { types: number[]; start: boolean; end: boolean; aggregate?: boolean } | undefined {
  const nal = encoding === 'H264' ? NAL.H264 : encoding === 'H265' ? NAL.H265 : undefined;
  const at = payloadAt(p);
  if (!nal || at === undefined || p.length < at + nal.header) return undefined;
  const type = nal.type(p[at]);
  if (type === nal.fragment) {
    if (p.length < at + nal.header + 1) return undefined;
    const fu = p[at + nal.header];
    return { types: [encoding === 'H264' ? fu & 0x1f : fu & 0x3f], start: (fu & 0x80) !== 0, end: (fu & 0x40) !== 0 };
  }
  if (type !== nal.aggregate) return { types: [type], start: true, end: true };
  const types: number[] = [];
  // A padded packet kept whole: its padding (the last byte says how much) is not NAL units.
  const end = p[0] & 0x20 && p.length === length ? p.length - p[p.length - 1] : p.length;
  for (let i = at + nal.header; i + 2 + nal.header <= end; ) {
    const size = p.readUInt16BE(i);
    if (size === 0) break;
    types.push(nal.type(p[i + 2]));
    i += 2 + size;
  }
  return { types, start: true, end: true, aggregate: true };
}

/**
 * Whether an RTP packet (its first bytes) can end an access unit: a slice NAL unit, or a NAL
 * unit that may close a unit after its slices (end of sequence or stream, filler; H.265's suffix
 * SEI), whole or as the fragment that ends it, or an aggregate holding a slice. A marked packet
 * holding parameter sets, a prefix SEI, a delimiter or a fragment that goes on does not end its unit.
 */
export function endsSlice(encoding: string, p: Buffer, length = p.length): boolean {
  const nal = encoding === 'H264' ? NAL.H264 : NAL.H265;
  const got = payloadNals(encoding, p, length);
  if (!got?.end || !got.types.length) return false;
  if (got.aggregate) return got.types.some(nal.slice);
  return nal.slice(got.types[0]) || nal.closing(got.types[0]);
}

/** Whether an RTP packet (its first bytes) starts a slice: one whole, the fragment that starts one, or an aggregate whose first unit is one. */
export function startsSlice(encoding: string, p: Buffer, length = p.length): boolean {
  const nal = encoding === 'H264' ? NAL.H264 : NAL.H265;
  const got = payloadNals(encoding, p, length);
  return !!got?.start && got.types.length > 0 && nal.slice(got.types[0]);
}

function mod32(n: number): number {
  return ((n % 2 ** 32) + 2 ** 32) % 2 ** 32;
}

/** A header's value (the first of that name), or undefined. */
function header(head: string, name: string): string | undefined {
  const re = new RegExp(`\\r?\\n${name}[ \\t]*:[ \\t]*([^\\r\\n]*)`, 'i');
  return re.exec(head)?.[1]?.trim();
}

/** The SDP's first video stream: its (first) payload type, encoding name (upper case) and clock rate, or undefined. */
export function videoStream(sdp: string): { pt: number; encoding?: string; clockRate?: number; donl?: boolean } | undefined {
  const sections = sdp.split(/\r?\nm=/);
  for (const s of sections.slice(1)) {
    const m = /^video\s+\S+\s+\S+\s+(\d+)/.exec(s);
    if (!m) continue;
    const pt = Number(m[1]);
    const map = new RegExp(`\\na=rtpmap:${pt}\\s+([^/\\s]+)/(\\d+)`).exec(s);
    // H.265 with sprop-max-don-diff > 0: its aggregates and fragments carry decoding order numbers (RFC 7798).
    // (ffmpeg's rtpdec_hevc turns them on for sprop-depack-buf-nalus > 0 too.)
    const fmtp = new RegExp(`\\na=fmtp:${pt}\\s([^\\r\\n]*)`).exec(s)?.[1] ?? '';
    const donl = /(?:^|[;\s])sprop-(?:max-don-diff|depack-buf-nalus)=0*[1-9]/.test(fmtp);
    if (map) return { pt, encoding: map[1].toUpperCase(), clockRate: Number(map[2]) || undefined, ...(donl ? { donl: true } : {}) };
    return { pt, clockRate: pt < 96 ? 90000 : undefined }; // static video payload types all count 90 kHz
  }
  return undefined;
}


/**
 * The start of a `Range: npt=START-…` value, microseconds, as ffmpeg reads it
 * (ff_rtsp_parse_range_npt: `npt=` exactly after leading spaces, then av_parse_time of a duration:
 * `[-][HH:]MM:SS[.frac]` or `[-]S[.frac]`, the fraction cut to microseconds); undefined for `now`
 * or anything else ffmpeg does not take.
 */
export function nptStart(range: string): number | undefined {
  const m = /^[ \t]*npt=([^-]*)/i.exec(range);
  if (!m) return undefined;
  const t = /^(-?)(?:(?:(\d+):)?(\d+):(\d+)|(\d+))(?:\.(\d*))?$/.exec(m[1]);
  if (!t) return undefined;
  const [, neg, hh, mm, ss, secs, frac] = t;
  const whole = secs !== undefined ? Number(secs) : Number(hh ?? 0) * 3600 + Number(mm) * 60 + Number(ss);
  const us = whole * 1e6 + Number(((frac ?? '') + '000000').slice(0, 6));
  return neg ? -us : us;
}

/**
 * Reads one direction of an RTSP connection as it is relayed: RTSP messages (head and body) and
 * interleaved packets (`$`, channel, 16-bit length; only the first KEEP bytes are kept). It
 * never holds more than one message; bytes that are not RTSP make it stop reading for good
 * (`broken`), and the relay goes on without it.
 */
export class InterleavedReader {
  broken = false;
  private head = '';
  private body: Buffer | undefined;
  private bodyLeft = 0;
  private headOf = '';
  /** Bytes of an interleaved packet's header still to read (4 in all), or of its payload. */
  /** An interleaved packet's header: its channel, and how many of its 3 bytes after `$` are read. */
  private channel = 0;
  private headerRead = 0;
  private payload: Buffer | undefined;
  private payloadLen = 0;
  private payloadLeft = 0;
  private payloadKept = 0;
  private mode: 'start' | 'head' | 'body' | 'frame' | 'payload' = 'start';

  /** What `onPacket` asked to send after packets of the chunk being read: offsets in it, and the bytes. */
  private inserts: { at: number; bytes: Buffer }[] | undefined;

  /** `onPacket` may return bytes to send on right after the packet (see `push`). */
  constructor(
    private readonly onMessage: (head: string, body: Buffer) => void,
    private readonly onPacket: (channel: number, p: Buffer, length: number) => Buffer | undefined | void,
  ) {}

  /** Reads a chunk; returns where bytes are to be sent after packets that end in it (offsets into it, in order), or undefined. */
  push(chunk: Buffer): { at: number; bytes: Buffer }[] | undefined {
    this.inserts = undefined;
    let i = 0;
    while (i < chunk.length && !this.broken) {
      switch (this.mode) {
        case 'start':
          if (chunk[i] === 0x24) {
            this.mode = 'frame';
            this.headerRead = 0;
            this.payloadLen = 0;
            i++;
          } else if (chunk[i] === 0x0d || chunk[i] === 0x0a) i++; // stray line ends between messages
          else {
            this.mode = 'head';
            this.head = '';
          }
          break;
        case 'frame':
          if (this.headerRead++ === 0) this.channel = chunk[i++];
          else this.payloadLen = (this.payloadLen << 8) | chunk[i++];
          if (this.headerRead === 3) {
            this.payloadLeft = this.payloadLen;
            this.payloadKept = 0;
            this.payload ??= Buffer.alloc(KEEP);
            this.mode = 'payload';
            if (this.payloadLen === 0) this.endPacket(i);
          }
          break;
        case 'payload': {
          const n = Math.min(this.payloadLeft, chunk.length - i);
          const keep = Math.min(n, KEEP - this.payloadKept);
          if (keep > 0) {
            chunk.copy(this.payload!, this.payloadKept, i, i + keep);
            this.payloadKept += keep;
          }
          i += n;
          this.payloadLeft -= n;
          if (this.payloadLeft === 0) this.endPacket(i);
          break;
        }
        case 'head': {
          // Up to the blank line, CRLF or LF alone (ffmpeg takes both); a head split over reads is joined.
          const take = Math.min(chunk.length, i + MAX_HEAD + 4 - this.head.length);
          const from = Math.max(0, this.head.length - 3);
          this.head += chunk.toString('latin1', i, take);
          const blank = /\r?\n\r?\n/.exec(this.head.slice(from));
          if (!blank) {
            i = take;
            if (this.head.length > MAX_HEAD) this.broken = true;
            break;
          }
          const end = from + blank.index + blank[0].length;
          i = take - (this.head.length - end); // what followed the blank line is read again
          const head = this.head.slice(0, from + blank.index);
          this.head = '';
          if (!/^(RTSP\/\d\.\d\s+\d{3}|[A-Z_]+\s+\S+\s+RTSP\/\d\.\d)/.test(head)) {
            this.broken = true;
            break;
          }
          const length = Number(header(head, 'content-length') ?? 0);
          if (!Number.isFinite(length) || length < 0 || length > MAX_BODY) {
            this.broken = true;
            break;
          }
          this.headOf = head;
          this.bodyLeft = length;
          this.body = length ? Buffer.alloc(length) : undefined;
          this.mode = 'body';
          if (length === 0) this.endMessage();
          break;
        }
        case 'body': {
          const n = Math.min(this.bodyLeft, chunk.length - i);
          chunk.copy(this.body!, this.body!.length - this.bodyLeft, i, i + n);
          i += n;
          this.bodyLeft -= n;
          if (this.bodyLeft === 0) this.endMessage();
          break;
        }
      }
    }
    return this.inserts;
  }

  /** A packet ended at offset `at` of the chunk being read. */
  private endPacket(at: number): void {
    this.mode = 'start';
    const bytes = this.onPacket(this.channel, this.payload!.subarray(0, this.payloadKept), this.payloadLen);
    if (bytes) (this.inserts ??= []).push({ at, bytes });
  }

  private endMessage(): void {
    this.mode = 'start';
    const body = this.body ?? Buffer.alloc(0);
    this.body = undefined;
    this.onMessage(this.headOf, body);
  }
}

/** How long the relay waits for the camera to accept its connection. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A relay on 127.0.0.1 between ffmpeg and an RTSP camera (see RtpClock). One connection at a
 * time (ffmpeg's; another while it is open is closed at once; a source's next ffmpeg connects
 * after `drop` ended the last one's, and gets a new clock); each is relayed to the
 * camera's host and port with backpressure both ways, bytes unchanged but for the access unit
 * delimiters added after H.264 and H.265 units (UnitEnds).
 *
 * A camera that redirects ffmpeg (a `3xx` reply with `Location`) is followed (relay-redirect):
 * ffmpeg is given `Location` pointing at the relay (the new path and query, the secrets as
 * placeholders), and the relay connects its next connection, ffmpeg's to the new address, there,
 * its certificate checked as the camera's, with the camera's credentials only where they go
 * (credentialsGo). A redirect past MAX_REDIRECTS in a row, to an address seen before in the
 * chain, to another scheme, or from a checked rtsps:// camera to plain rtsp:// is refused: the
 * connection is ended, and `redirectRefused` says why.
 */
export class RtspTap {
  private readonly door: RelayDoor;
  private pair: RelayedPair | undefined;
  /** The clock of the current connection. */
  clock = new RtpClock();
  /** The last error reaching the camera (connection refused, timed out, reset), for ffmpeg's failure message. */
  upstreamError: string | undefined;
  /** Why a redirect of the camera's was not followed (the source fails with it), or undefined. */
  redirectRefused: string | undefined;
  /** A redirect followed to an address the camera's credentials do not go to: said with a failure. */
  private withheld: string | undefined;
  /**
   * The camera's address, and the user and password of its URL (added by the relay, never given
   * to ffmpeg: rtsp-auth), and the secret query parameters (`?token=`, `pwd=`: secretParams):
   * ffmpeg is given the placeholder, which the relay makes the real value in each request's URI
   * (and Digest `uri`), and the real value the camera echoes back (Content-Base, the SDP's
   * controls, RTP-Info) the placeholder again: ffmpeg never holds it, and the URLs it compares
   * (RTP-Info's with its SETUP's) are in one form. `rtsps://`: the relay speaks TLS to the camera
   * and plain RTSP to its ffmpeg on 127.0.0.1, and checks the camera's certificate as `check`
   * says (ffmpeg 5.1's own RTSPS cannot: its RTSP demuxer takes no TLS options). Nothing of
   * ffmpeg's reaches the camera before it is checked.
   */
  private readonly camera: RelayTarget;
  /** Where a redirect sent ffmpeg: the next connection goes there (then back to the camera). */
  private next: { target: RelayTarget; chain: RedirectChain } | undefined;
  private readonly check: CameraTls;
  /** `check.ca`'s certificates, read by `listen`. */
  private ca: Buffer | undefined;
  private relayPort = 0;
  /** Hosts the camera's credentials may be sent to after a redirect, beside its own origin (the source's `sendCredentialsTo`). */
  private readonly credentialsTo: readonly string[];

  /** `endUnits`: send ffmpeg a delimiter after each access unit of H.264 and H.265 cameras (UnitEnds; the source's `decode.lowLatency`). Default true. */
  readonly endUnits: boolean;

  /**
   * RTP over UDP, beside the relay: ffmpeg sends its own UDP (NAT punch packets, RTCP receiver
   * reports) to the address it spoke RTSP to, the relay's, unless the camera's Transport reply
   * names its `source`; the relay adds the camera's address there (withCameraSource).
   */
  private readonly mediaBeside: boolean;

  constructor(
    readonly url: string,
    options: { endUnits?: boolean; tls?: CameraTls; mediaBeside?: boolean; peerCheck?: PeerCheck; log?: LogFn; sendCredentialsTo?: readonly string[] } = {},
  ) {
    this.endUnits = options.endUnits ?? true;
    this.mediaBeside = options.mediaBeside ?? false;
    this.check = options.tls ?? { verify: true };
    this.credentialsTo = options.sendCredentialsTo ?? [];
    // ffmpeg's defaults: 554, and RTSPS's 322. (A URL that names no host: the relay fails to connect, naming it.)
    const m = AUTHORITY.exec(url);
    this.camera = relayTarget(url, RTSP_PORTS) ?? {
      scheme: /^rtsps:/i.test(url) ? 'rtsps' : 'rtsp',
      host: (m?.[2] ?? '').replace(/^\[|\]$/g, ''),
      port: m?.[3] && m[3].length > 1 ? Number(m[3].slice(1)) : /^rtsps:/i.test(url) ? 322 : 554,
      tls: /^rtsps:/i.test(url),
      authority: `${m?.[2] ?? ''}${m?.[3] ?? ''}`,
      cred: urlCredentials(url),
      secrets: secretParams(url),
      path: '/',
      url,
    };
    // Only this user's connections (ffmpeg's), checked before one takes the relay's single place
    // (`accept`): another user's would get the camera's stream with the credentials the relay
    // adds, or, connecting first (the relay keeps its port across ffmpeg's restarts), keep the
    // source's ffmpeg out. (A few open: ffmpeg's reconnection comes while its last connection closes.)
    this.door = new RelayDoor({
      accept: (down) => this.accept(down),
      maxOpen: 4,
      peerCheck: options.peerCheck,
      log: options.log,
      name: `the RTSP relay to ${addressOf(this.camera)}`,
    });
  }

  /** Starts listening; resolves with the URL ffmpeg is to open (the camera's, with the relay's host and port). */
  async listen(): Promise<string> {
    if (this.camera.tls && this.check.verify && this.check.ca) this.ca = await readCameraCa(this.check.ca);
    this.relayPort = await this.door.listen();
    return relayUrl(this.url, this.relayPort);
  }

  private accept(down: Socket): void {
    // One connection at a time: another local process connecting meanwhile cannot cut ffmpeg's.
    // (A connection whose ffmpeg has closed its side is over: ffmpeg reconnecting at once, after a
    // redirect, is let in.)
    if (this.pair && !this.pair.down.readableEnded && !this.pair.down.destroyed) {
      down.destroy();
      return;
    }
    // After a redirect, ffmpeg's next connection is to the new address; any other starts at the camera.
    const hop = this.next;
    this.next = undefined;
    this.drop();
    const target = hop?.target ?? this.camera;
    if (!hop) this.redirectRefused = this.withheld = undefined;
    const chain = hop?.chain ?? startChain(this.camera.url);
    const clock = new RtpClock();
    this.clock = clock;
    let up: Socket;
    try {
      up = target.tls
        ? // Checked by `refusal` once the handshake is done, to say why and give the fingerprint.
          tlsConnect({ host: target.host, port: target.port, servername: isIP(target.host) ? undefined : target.host, rejectUnauthorized: false, ...(this.ca ? { ca: this.ca } : {}) })
        : connect({ host: target.host, port: target.port });
    } catch (e) {
      // A camera address Node refuses outright (a port above 65535: it threw out of this
      // connection handler and stopped the whole process): this camera's failure alone.
      this.upstreamError = `${target.host}:${target.port}: ${(e as Error).message}`;
      down.destroy();
      return;
    }
    const pair: RelayedPair = { down, up, session: undefined };
    this.pair = pair;
    down.setNoDelay(true);
    up.setNoDelay(true);
    const timer = setTimeout(() => {
      this.upstreamError = `could not connect to ${target.host}:${target.port} in ${CONNECT_TIMEOUT_MS / 1000} s`;
      up.destroy();
      down.destroy();
    }, CONNECT_TIMEOUT_MS);
    const camera = addressOf(target);
    // Nothing goes either way before the camera is reached (and its certificate checked):
    // ffmpeg's first request, with its credentials, waits in its socket.
    up.once(target.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      const refused = target.tls ? this.refusal(up as TLSSocket, target) : undefined;
      if (refused) {
        this.upstreamError = `${camera}: ${refused}`;
        up.destroy();
        down.destroy();
        return;
      }
      this.upstreamError = undefined;
      // An address the camera's credentials do not go to: ffmpeg's answer (with the placeholder) is not sent either.
      const unsent = !target.cred && this.camera.cred ? withoutAuthorization : undefined;
      const auth = target.cred || target.secrets.size || unsent ? new AuthRewriter(target.cred, unsent, { secrets: target.secrets }) : undefined;
      // (The clock reads ffmpeg's requests as ffmpeg sent them, and the replies as ffmpeg gets them.)
      // (ffmpeg's side ended with its session still played: the relay ends it, TEARDOWN first.)
      const ended = () => {
        if (pair.tornDown || !pair.session) return false;
        endPair(pair);
        return true;
      };
      relay(down, up, requests, { rewrite: auth && ((chunk) => auth.push(chunk)), flush: auth && (() => auth.flush()), reads: 'sent', ended });
      // A request of the relay's own (its TEARDOWN: endPair), made as ffmpeg's are on their way.
      // (A rewriter of its own: ffmpeg's may be mid-packet, or flushed at ffmpeg's end.)
      pair.sendUp = (head) => {
        const own = auth && new AuthRewriter(target.cred, unsent, { secrets: target.secrets });
        for (const piece of own ? own.push(Buffer.from(head, 'latin1')) : [Buffer.from(head, 'latin1')]) up.write(piece);
      };
      // What is not passed on to ffmpeg: a redirect refused; from a camera whose certificate is
      // checked, replies the relay cannot read (it could not see a redirect in them).
      let redirectRefused = false;
      const stop = (): boolean => {
        if (redirectRefused) return true;
        if (!target.tls || !replies.broken) return false;
        this.upstreamError = `${camera}: its replies could not be read, and argus passes on nothing it cannot read from a camera whose certificate it checks`;
        return true;
      };
      // The camera's replies, edited for ffmpeg: a redirect's Location pointed at the relay, its
      // address as a UDP transport's source (media beside the relay), the placeholder for its secrets.
      const secrets = target.secrets;
      const sourced = this.mediaBeside && !this.endUnits;
      const edited = new AuthRewriter(
        undefined,
        (head) => {
          let out = head;
          if (/^RTSP\/\d\.\d\s+3\d\d/.test(out)) {
            const followed = this.redirected(out, target, chain);
            if (followed === undefined) {
              redirectRefused = true;
              return head;
            }
            out = followed;
          }
          if (sourced) out = withCameraSource(out, up.remoteAddress);
          return secrets.size ? swapSecrets(out, secrets, false) : out;
        },
        secrets.size ? { body: (_head, body) => swapSecrets(body, secrets, false) } : {},
      );
      relay(up, down, replies, { stop, rewrite: (chunk) => edited.push(chunk), flush: () => edited.flush(), reads: 'received' });
      // (Held paused by the relay's door until now: ffmpeg's request waited in its socket.)
      down.resume();
    });
    const requests = new InterleavedReader(
      (head) => {
        clock.request(head);
        noteRequest(pair, head);
      },
      () => {},
    );
    const ends = this.endUnits ? new UnitEnds(clock) : undefined;
    const replies = new InterleavedReader(
      (head, body) => clock.response(head, body),
      (channel, p, length) => {
        clock.packet(channel, p, length, now());
        return ends?.after(channel, p, length);
      },
    );
    up.on('error', (e: NodeJS.ErrnoException) => {
      // TLS failures say why in the message ("wrong version number": a plain port addressed as rtsps://), not in the code (EPROTO).
      const why = e.code && !/^(EPROTO|ERR_SSL)/.test(e.code) ? e.code : e.message;
      this.upstreamError = `${camera}: ${why}`;
    });
    down.on('error', () => {});
    const close = () => {
      clearTimeout(timer);
      endPair(pair);
      if (this.pair === pair) this.pair = undefined;
    };
    up.on('close', close);
    down.on('close', close);
  }

  /**
   * A redirect's reply head from `from` (reached by `chain`) as ffmpeg is to get it: its
   * `Location` the relay's, and the next connection set to go there. A redirect that is not
   * followed sets `redirectRefused` (and `upstreamError`) and returns undefined. A 3xx without
   * `Location` is passed on as it is (ffmpeg fails on it).
   */
  private redirected(head: string, from: RelayTarget, chain: RedirectChain): string | undefined {
    const location = /(\r?\n)(location[ \t]*:[ \t]*)([^\r\n]*)/i.exec(head);
    const value = location?.[3].trim();
    if (!location || !value) return head;
    const refuse = (why: string): undefined => {
      this.redirectRefused = `the camera at ${addressOf(this.camera)} ${why}: not followed`;
      this.upstreamError = `${addressOf(from)}: ${why}`;
    };
    const to = relayTarget(value, RTSP_PORTS);
    if (!to) return refuse(`redirected to ${value.replace(/^([^/?#]*\/\/)[^/?#]*@/, '$1')}, which is not an rtsp:// or rtsps:// address`);
    const step = nextStep(chain, to, from, this.camera.tls && checksCertificate(this.camera.url, this.check));
    if (typeof step === 'string') return refuse(step);
    const cred = to.cred ?? (credentialsGo(this.camera, to, this.credentialsTo) ? this.camera.cred : undefined);
    this.next = { target: { ...to, cred }, chain: step };
    if (this.camera.cred && !cred) this.withheld = `redirected to ${to.url}, another origin than the camera's, where its credentials are not sent (name its host in the source's sendCredentialsTo to send them)`;
    // ffmpeg keeps its placeholder user and password for the new address (rtsp.c keeps rt->auth
    // when the new URL has none): one is given only where the camera's URL had none.
    const user = cred && !this.camera.cred ? `${PLACEHOLDER_USERINFO}@` : '';
    const relayed = placeholderQuery(`rtsp://${user}127.0.0.1:${this.relayPort}${to.path}`);
    return `${head.slice(0, location.index)}${location[1]}${location[2]}${relayed}${head.slice(location.index + location[0].length)}`;
  }

  /** Why `target`'s certificate is not taken (`check`), or undefined when it is. */
  private refusal(up: TLSSocket, target: RelayTarget): string | undefined {
    const cert = up.getPeerCertificate();
    const fingerprint = cert?.fingerprint256;
    if (this.check.fingerprint) return fingerprint === this.check.fingerprint ? undefined : `its certificate (SHA-256 ${fingerprint ?? 'none'}) is not the one tls.fingerprint names`;
    if (!this.check.verify) return undefined;
    const code = String(up.authorizationError);
    // (Node names a certificate for other names by its code alone: checkServerIdentity says which.)
    const why = up.authorized || code === 'ERR_TLS_CERT_ALTNAME_INVALID' ? checkServerIdentity(target.host, cert)?.message : (CERT_ERRORS[code] ?? code);
    if (!why) return undefined;
    const advice = this.check.ca
      ? "check that tls.ca holds the authority that signed it, for the camera's name or address"
      : "give the camera CA's certificate as tls.ca";
    return `certificate not trusted (${why}; its SHA-256 fingerprint ${fingerprint ?? 'none'}): ${advice}, or this certificate's fingerprint as tls.fingerprint once compared with the camera's own, or tls: { verify: false }`;
  }

  /**
   * ffmpeg's text (its log) naming the camera instead of the relay, with what went wrong in
   * reaching it (ffmpeg only sees the relay close).
   */
  unrelay(text: string): string {
    const camera = AUTHORITY.exec(this.url);
    const address = camera ? `${camera[2]}${camera[3] ?? ''}` : this.camera.host;
    // (An RTSPS camera's URLs name its scheme again: ffmpeg spoke plain RTSP to the relay.)
    // (The placeholder user and password ffmpeg was given name the camera's own again, which redaction then hides.)
    const info = /^rtsps?:\/\/([^/?#]*)@/i.exec(this.url)?.[1];
    const real = this.camera.cred && this.relayPort && info !== undefined ? text.split(`${PLACEHOLDER_USERINFO}@127.0.0.1:${this.relayPort}`).join(`${info}@127.0.0.1:${this.relayPort}`) : text;
    const scheme = this.camera.tls ? real.replace(new RegExp(`rtsp://([^\\s/@]*@)?127\\.0\\.0\\.1:${this.relayPort}\\b`, 'g'), `rtsps://$1127.0.0.1:${this.relayPort}`) : real;
    const named = this.relayPort ? scheme.split(`127.0.0.1:${this.relayPort}`).join(address).split(`127.0.0.1 port ${this.relayPort}`).join(`${camera?.[2] ?? this.camera.host} (through argus's relay)`) : text;
    const withheld = this.withheld ? `${named}\ncamera: ${this.withheld}` : named;
    return this.upstreamError ? `${withheld}\ncamera: ${this.upstreamError}` : withheld;
  }

  /** A drop waiting for its ffmpeg to go (drop's `after`): `close` ends the connection then too. */
  private dropping: Promise<void> | undefined;

  /**
   * Ends the relayed connection (its ffmpeg is done), so that the next ffmpeg's is accepted (at
   * the camera, not where a redirect sent the last); with `after`, once it resolves: ffmpeg,
   * stopping, sends the camera its TEARDOWN through it (ffmpeg-source stopFfmpeg).
   */
  drop(after?: Promise<void>): void {
    if (after && this.pair) {
      const pair = this.pair;
      this.dropping = after;
      void after.then(() => {
        if (this.dropping === after) this.dropping = undefined;
        if (this.pair === pair) this.drop();
      });
      return;
    }
    if (this.pair) endPair(this.pair);
    this.pair = undefined;
    this.next = undefined;
  }

  /** Stops listening and ends the relayed connection. */
  close(): void {
    this.door.close();
    const dropping = this.dropping;
    if (dropping) void dropping.then(() => this.drop());
    else this.drop();
  }
}

/** One relayed connection: ffmpeg's (`down`), the camera's (`up`), and what the relay knows of its RTSP session. */
interface RelayedPair {
  down: Socket;
  up: Socket;
  /** ffmpeg's session: its id, the URI it played, its last CSeq and Authorization (as ffmpeg sent them); undefined before a PLAY. */
  session: { id: string; uri: string; cseq: number; authorization?: string } | undefined;
  /** ffmpeg sent TEARDOWN itself. */
  tornDown?: boolean;
  /** Writes a request head of the relay's own to the camera, as ffmpeg's are written (its credentials). */
  sendUp?: (head: string) => void;
  ended?: boolean;
}

/** How long the camera's side of a connection is kept after the relay's TEARDOWN (endPair), for the camera to read it, ms. */
const TEARDOWN_LINGER_MS = 1000;

/** Notes what ffmpeg's request `head` tells of its session (RelayedPair.session). */
function noteRequest(pair: RelayedPair, head: string): void {
  const [method, uri] = head.split(/\s+/, 2);
  const header = (name: string) => new RegExp(`\\r?\\n${name}[ \\t]*:[ \\t]*([^\\r\\n]*)`, 'i').exec(head)?.[1]?.trim();
  const cseq = Number(header('cseq') ?? NaN);
  if (method === 'TEARDOWN') pair.tornDown = true;
  if (method === 'PLAY') {
    const id = header('session')?.split(';')[0];
    if (id && uri) pair.session = { id, uri, cseq: 0 };
  }
  if (pair.session) {
    if (Number.isFinite(cseq)) pair.session.cseq = Math.max(pair.session.cseq, cseq);
    pair.session.authorization = header('authorization') ?? pair.session.authorization;
  }
}

/**
 * Ends a relayed connection. Where ffmpeg played a session and did not tear it down (it was
 * killed, or stopped while it was still probing the stream, when ffmpeg's SIGTERM interrupts its
 * I/O, the TEARDOWN's write with it), the relay sends the camera TEARDOWN itself (the Session,
 * URI and credentials ffmpeg used), and closes the camera's side after it, TEARDOWN_LINGER_MS at
 * most: a camera that takes 2 to 4 sessions refused the next (453, 503) until the one left timed out.
 */
function endPair(pair: RelayedPair): void {
  if (pair.ended) return;
  pair.ended = true;
  pair.down.destroy();
  const s = pair.session;
  if (pair.tornDown || !s || !pair.sendUp || pair.up.destroyed || !pair.up.writable) {
    pair.up.destroy();
    return;
  }
  try {
    pair.sendUp(`TEARDOWN ${s.uri} RTSP/1.0\r\nCSeq: ${s.cseq + 1}\r\nSession: ${s.id}\r\n${s.authorization ? `Authorization: ${s.authorization.replace(/(^|,)(\s*uri\s*=\s*)("[^"]*"|[^,\s]*)/i, (_x, a: string, b: string, v: string) => `${a}${b}${v.startsWith('"') ? `"${s.uri}"` : s.uri}`)}\r\n` : ''}User-Agent: argus\r\n\r\n`);
    pair.up.end();
  } catch {
    pair.up.destroy();
    return;
  }
  setTimeout(() => pair.up.destroy(), TEARDOWN_LINGER_MS).unref();
}

/** A request head without its `Authorization` (ffmpeg's answer with the placeholder, for an address the camera's credentials do not go to). */
export function withoutAuthorization(head: string): string {
  return head.replace(/\r?\nauthorization[ \t]*:[^\r\n]*/gi, '');
}

/** RTSP's default ports, as ffmpeg's: 554, and RTSPS's 322. */
const RTSP_PORTS = { rtsp: 554, rtsps: 322 } as const;

/**
 * Bytes from `from` to `to`, read by `reader` on the way, pausing `from` while `to` is full:
 * unchanged, but for what `rewrite` makes of them (the camera's credentials and secrets in
 * ffmpeg's requests; the camera's address and the secrets' placeholder in its replies), and what
 * the reader's packet callback adds after a packet (UnitEnds). `reads`: whether the reader reads
 * the bytes as `from` sent them, or as `to` gets them (its inserts are placed in those).
 */
function relay(from: Socket, to: Socket, reader: InterleavedReader, o: { stop?: () => boolean; ended?: () => boolean; rewrite?: (chunk: Buffer) => Buffer[]; flush?: () => Buffer[]; reads: 'sent' | 'received' }): void {
  from.on('data', (chunk: Buffer) => {
    if (o.reads === 'sent' && !reader.broken) reader.push(chunk);
    const pieces = o.rewrite ? o.rewrite(chunk) : [chunk];
    let room = true;
    for (const piece of pieces) {
      const inserts = o.reads === 'received' && !reader.broken ? reader.push(piece) : undefined;
      // (A piece is read before it is sent: what `stop` refuses never leaves.)
      if (o.stop?.()) {
        from.destroy();
        to.destroy();
        return;
      }
      if (!inserts) {
        room = to.write(piece) && room;
        continue;
      }
      // The pieces leave in one write to the socket (uncork sends them together).
      to.cork();
      let done = 0;
      for (const { at, bytes } of inserts) {
        if (at > done) room = to.write(piece.subarray(done, at)) && room;
        room = to.write(bytes) && room;
        done = at;
      }
      if (done < piece.length) room = to.write(piece.subarray(done)) && room;
      to.uncork();
    }
    if (!room) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.on('end', () => {
    // (Bytes `rewrite` held, not being what it reads: passed on as they came.)
    for (const piece of o.flush?.() ?? []) if (!o.stop?.()) to.write(piece);
    if (o.ended?.()) return;
    to.end();
  });
}

/**
 * `url` with its host and port replaced by the relay's (path and query kept); plain `rtsp://`
 * (the relay ends an RTSPS camera's TLS). A user and password become PLACEHOLDER_USERINFO: the
 * relay puts the real ones in ffmpeg's answers to the camera's challenge (rtsp-auth), so that
 * ffmpeg's command line, which every local user can read, holds none. A user alone is kept.
 * The value of each secret query parameter (`token=`, `pwd=`, …) becomes PLACEHOLDER_SECRET.
 */
export function relayUrl(url: string, port: number): string {
  const relayed = url.replace(AUTHORITY, (_m, user: string) => {
    const scheme = /^rtsps?:\/\//i.exec(user)![0];
    const info = user.slice(scheme.length, -1);
    const kept = !user.endsWith('@') ? '' : urlCredentials(url) ? `${PLACEHOLDER_USERINFO}@` : `${info}@`;
    return `${scheme.replace(/^rtsps/i, 'rtsp')}${kept}127.0.0.1:${port}`;
  });
  return placeholderQuery(relayed);
}

/**
 * A reply head with the camera's `address` added as the `source` of its unicast UDP Transport
 * (ffmpeg takes the first), where the camera named none: ffmpeg sends its NAT punch packets and
 * RTCP receiver reports to the transport's `source`, else to the address of its RTSP connection,
 * which through the relay is 127.0.0.1 (the camera never had them: behind NAT or a stateful
 * firewall its RTP was not let in, and a camera that times out a client without reports
 * stopped). Other heads, TCP and multicast transports are returned as they are.
 */
export function withCameraSource(head: string, address: string | undefined): string {
  if (!address || !/^RTSP\/\d\.\d\s/.test(head)) return head;
  return head.replace(/(\r?\n)(transport[ \t]*:[ \t]*)([^\r\n]*)/i, (m, nl: string, name: string, value: string) => {
    const comma = value.indexOf(',');
    const first = comma < 0 ? value : value.slice(0, comma);
    const [spec, ...params] = first.split(';').map((p) => p.trim().toLowerCase());
    if (!/^rtp\/avp(\/udp)?$/.test(spec) || params.some((p) => p === 'multicast' || /^source\s*=/.test(p))) return m;
    return `${nl}${name}${first};source=${address}${comma < 0 ? '' : value.slice(comma)}`;
  });
}

/**
 * A source's `tls.ca` file: the PEM certificates in it, each checked to be one. Anything else
 * (nothing, a key, a block that is not a certificate) is a VAP_ERR_CONFIG error naming the file:
 * taken as it is, it would only make every camera untrusted, and the error blame the camera.
 */
export async function readCameraCa(path: string): Promise<Buffer> {
  const bad = (why: string) => new ArgusError(ErrorCodes.CONFIG, `tls.ca: ${path}: ${why}`);
  // Bounded, and a regular file only: /dev/zero was read to Node's 2 GiB limit, and a named pipe
  // nobody writes to held the start for ever.
  const bytes = await readSmallFile(path, MAX_CA_BYTES).catch((e: Error) => {
    throw bad(e.message);
  });
  const text = bytes.toString('latin1');
  const blocks = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)];
  if (!blocks.length) throw bad('holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER file is converted with `openssl x509 -inform der -in FILE -out FILE.pem`');
  // A block begun and not ended (or ended under another label) would be skipped by TLS unseen.
  if ((text.match(/-----BEGIN /g) ?? []).length !== blocks.length) throw bad('holds a PEM block that does not end as it begins');
  blocks.forEach((b, i) => {
    if (/PRIVATE KEY/.test(b[1])) throw bad(`block ${i + 1} is a private key: a CA file holds certificates only (and a key has no place in it)`);
    if (b[1] !== 'CERTIFICATE') throw bad(`block ${i + 1} is a ${b[1]}, not a CERTIFICATE`);
    try {
      new X509Certificate(b[0]);
    } catch (e) {
      throw bad(`block ${i + 1} is not a readable certificate (${(e as Error).message})`);
    }
  });
  return bytes;
}

/** OpenSSL's reasons for not trusting a certificate, as people say them. */
const CERT_ERRORS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'a self-signed certificate in its chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'signed by an authority not trusted here',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'signed by an authority not trusted here',
  UNABLE_TO_GET_ISSUER_CERT: 'signed by an authority not trusted here',
  CERT_HAS_EXPIRED: 'expired',
  CERT_NOT_YET_VALID: 'not valid yet',
};

/**
 * An rtsp:// URL's user part (to its last `@` before the path, as ffmpeg's av_url_split reads
 * it), host and `:port`.
 */
const AUTHORITY = /^(rtsps?:\/\/(?:[^/?#]*@)?)(\[[^\]]*\]|[^:/?#@]*)(:\d*)?/i;

