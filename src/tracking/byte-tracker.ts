import { ObservedTime, OUTAGE_MS } from '../core/clock.js';
import { Detections, type TrackOrigin } from '../core/detections.js';
import { iouXyxy } from '../core/geometry.js';
import { LinearAssignment } from './assignment.js';
import { createKalmanState, kalmanBoxXyxy, kalmanInitiate, kalmanPredict, kalmanScale, kalmanUpdate } from './kalman.js';
import type { KalmanState } from './kalman.js';

/**
 * ByteTrack options. Costs are `1 − IoU` (times the detection score where `fuseScore` says
 * so) between a track's Kalman-predicted box and a detection; a pair matches only when its
 * cost is below the stage's threshold.
 */
export interface ByteTrackerOptions {
  /**
   * Detections scoring at least this are "high" (default 0.5): they are matched first, to
   * every confirmed track, lost ones included, and only they may start tracks. Raising it
   * keeps doubtful boxes from stealing tracks in the first stage, but leaves more objects to
   * the stricter second stage, which cannot revive lost tracks.
   */
  readonly trackHighThresh?: number;
  /**
   * Detections scoring at least this but below `trackHighThresh` are "low" (default 0.1):
   * they can only continue tracks that were tracked on the previous frame (second stage).
   * Lowering it keeps tracks alive through partial occlusion and motion blur, but lets more
   * clutter extend a track whose object has gone. Below it, detections are ignored.
   */
  readonly trackLowThresh?: number;
  /**
   * An unmatched high detection starts a (tentative) track only if it scores at least this
   * (default 0.6, the reference's `track_thresh + 0.1`); values below `trackHighThresh` act as
   * `trackHighThresh`. Raising it suppresses tracks on false positives, but an object that
   * the detector sees with middling confidence is picked up later, or never.
   */
  readonly newTrackThresh?: number;
  /**
   * First stage cost threshold, high detections × confirmed tracks (default 0.8). Raising it
   * lets fast or erratic objects, and tracks predicted through long gaps, be matched with
   * less overlap, but in crowds risks handing a track to a neighbour (id switch).
   */
  readonly matchThresh?: number;
  /**
   * Second stage cost threshold, low detections × still-unmatched tracked tracks (default
   * 0.5, plain `1 − IoU`). Raising it keeps more tracks alive on weak boxes, but lets
   * background clutter next to a vanished object keep its track going.
   */
  readonly secondMatchThresh?: number;
  /**
   * Cost threshold for tentative tracks × leftover high detections (default 0.7). Raising
   * it confirms fast movers sooner (a new track has no velocity yet), but pairs up unrelated
   * false positives into tracks more easily.
   */
  readonly unconfirmedMatchThresh?: number;
  /**
   * Multiply IoU by the detection score in the first and tentative stages (default true, as
   * the ByteTrack reference outside MOT20). It favours confident boxes when several overlap a
   * track, but a low-scoring high box needs more overlap to match; turn it off when scores
   * are poorly calibrated or scenes very crowded.
   */
  readonly fuseScore?: boolean;
  /**
   * Match detections only to tracks of the same class (default true). It prevents a bag and
   * the person carrying it from swapping ids, but a detector that flickers between classes
   * (car/truck) breaks the track into a new id at every flip; turn it off for such models.
   */
  readonly classAware?: boolean;
  /**
   * Nominal frame rate of the source, frames per second (default 30). Motion is modelled
   * per nominal frame period, and each update advances the model by the elapsed time
   * divided by that period, so dropped or late frames keep tracks aligned. It also scales
   * the process noise per frame: a hint far above the real rate makes the filter follow
   * detections (and their jitter) closely; far below, it smooths more but lags on turns.
   * The reference's noise weights were tuned per frame of 30 fps video: use the source's
   * nominal rate.
   */
  readonly frameRateHint?: number;
  /**
   * How long a confirmed track that nothing matches is kept as "lost", in milliseconds
   * (default 1000). Lost tracks are predicted onwards and can be re-found with their id.
   * Raising it carries ids through longer occlusions, but predicted boxes drift over time and
   * a newcomer at the same place may inherit an old id.
   */
  readonly lostTrackBufferMs?: number;
  /**
   * Consecutive matched updates before a track is confirmed and gets an id (default 3);
   * a tentative track that misses one update is dropped. Raising it suppresses ids on
   * flickering false positives, but each real object is reported that many frames late and
   * fast movers are harder to confirm. 1 confirms tracks on their first detection.
   */
  readonly minConfirmFrames?: number;
}

export const BYTE_TRACKER_DEFAULTS: Readonly<Required<ByteTrackerOptions>> = Object.freeze({
  trackHighThresh: 0.5,
  trackLowThresh: 0.1,
  newTrackThresh: 0.6,
  matchThresh: 0.8,
  secondMatchThresh: 0.5,
  unconfirmedMatchThresh: 0.7,
  fuseScore: true,
  classAware: true,
  frameRateHint: 30,
  lostTrackBufferMs: 1000,
  minConfirmFrames: 3,
});

export type TrackState = 'tentative' | 'tracked' | 'lost';

/** A copy of one track's state after the latest `update()`. */
export interface TrackSnapshot {
  /** Published track id; −1 while the track is tentative. */
  readonly id: number;
  readonly state: TrackState;
  /** The filter's box: corrected by this update's detection when tracked, predicted otherwise. */
  readonly xyxy: readonly [x1: number, y1: number, x2: number, y2: number];
  readonly classId: number;
  /** Confidence of the last matched detection. */
  readonly score: number;
  /** Detections matched so far, the one that started the track included. */
  readonly hits: number;
  /** Milliseconds since the track's first detection. */
  readonly ageMs: number;
  /** Tracker time of the last matched detection (see `ByteTracker.update`). */
  readonly lastSeenMs: number;
}

/**
 * Tentative tracks are matched with both boxes widened by this fraction of their width and
 * height on each side (the buffered IoU of C-BIoU, Yang et al. 2023): a new track has no
 * velocity yet, so its prediction stays where it was first seen, and with plain IoU an object
 * that moved more than about half its width between the frames argus processed (a walker at
 * 5 fps, items on a fast belt) never got an id. Buffered, up to about 0.8 of its width.
 */
const TENTATIVE_BUFFER = 0.3;

/**
 * Which of an object's sightings before its track started a track keeps (Track.pre): the
 * detections, on consecutive frames, that no track took and that scored at least
 * `trackLowThresh` but too little to start one (`newTrackThresh`), each overlapping the next as a
 * tentative track's must. A person coming into view is often scored under 0.6 on the first frames
 * (cut off by the border, in a doorway's shadow): the track started only once they were past a
 * line near there, and the crossing was lost. The latest PRE_TRACK_MIN_SIGHTINGS, and those
 * within PRE_TRACK_MS of the latest, at most PRE_TRACK_SIGHTINGS: a second at 10 to 120 fps, 10
 * frames below 10 fps (2 s at 5), the latest 120 above 120 fps (a bound on memory: at most
 * UNCLAIMED_KEPT chains of them, about 2 MB measured).
 * Before, the latest 10 whatever the rate: a third of a second at 30 fps, and a person scored low
 * for longer than that before a line near the door was not counted; then at most 30: half a
 * second at 60 fps, not the second promised.
 */
export const PRE_TRACK_MS = 1000;
export const PRE_TRACK_MIN_SIGHTINGS = 10;
export const PRE_TRACK_SIGHTINGS = 120;

/** How many unclaimed detections of a frame are kept as sightings before a track (PRE_TRACK_SIGHTINGS), at most. */
const UNCLAIMED_KEPT = 32;

/** A detection no track took (see PRE_TRACK_SIGHTINGS): its box, tracker time, label, score, and the sighting it continues. */
interface Unclaimed {
  readonly box: Float32Array;
  readonly ms: number;
  readonly classId: number;
  readonly score: number;
  prev: Unclaimed | undefined;
  /** The sighting that continues it (while its chain goes on: the oldest is dropped through it). */
  next: Unclaimed | undefined;
  /**
   * Sightings in its chain, itself included (at most PRE_TRACK_SIGHTINGS), and the oldest of them:
   * held by the chain's latest only (handed on to the sighting that continues it). Before, every
   * sighting kept the chain's oldest of when it was the latest, and that one, dropped since, the
   * oldest of its own time, and so on back: a chain that went on (a poster scored 0.2 all day)
   * kept every sighting it ever had alive: 24 MB in 10 minutes at 120 fps, for each such object
   * (up to UNCLAIMED_KEPT).
   */
  depth: number;
  oldest: Unclaimed | undefined;
}

/** detTaken: a detection that started a track on this update (linkUnclaimed), as against one a live track took (1). */
const STARTED = 2;

/** Two tracks whose boxes overlap more than this are duplicates; the younger one goes (reference: cost < 0.15). */
const DUPLICATE_IOU = 0.85;

const TENTATIVE = 0;
const TRACKED = 1;
const LOST = 2;
const STATE_NAMES: readonly TrackState[] = ['tentative', 'tracked', 'lost'];

class Track {
  readonly kf: KalmanState = createKalmanState();
  /** 0 until confirmed. */
  id = 0;
  state = TENTATIVE;
  classId: number;
  score: number;
  hits = 1;
  readonly firstSeenMs: number;
  /** The first detection's box (xyxy): where the object was when the tracker first saw it. */
  readonly firstXyxy: Float32Array;
  /** The boxes (xyxy) of its detections while tentative, first to last (`hits` of them, at most minConfirmFrames), their times, labels and scores. */
  readonly tentativeXyxy: Float32Array;
  readonly tentativeMs: Float64Array;
  readonly tentativeClass: Int32Array;
  readonly tentativeScore: Float32Array;
  lastSeenMs: number;
  /** The object's last sightings before its first detection that started it (PRE_TRACK_SIGHTINGS), latest first; dropped once it is confirmed. */
  pre: Unclaimed | undefined = undefined;
  /** Observed time (see ObservedTime) of the last matched detection: what the lost-track buffer counts from. */
  lastSeenObsMs: number;
  /** When the track was confirmed (the tracker's clock), or −Infinity. */
  confirmedMs = -Infinity;
  /** Row of the detection matched in the current update, or −1. */
  row = -1;
  /**
   * Nominal periods of stalls since its last match beyond the one usual gap each counted as
   * (ByteTracker.update): where its speed would have taken it is tried too until it is matched.
   */
  carry = 0;
  removed = false;

  constructor(classId: number, score: number, nowMs: number, observedMs: number, xyxy: Float32Array, row: number, minConfirmFrames: number) {
    this.classId = classId;
    this.score = score;
    this.tentativeXyxy = new Float32Array(4 * minConfirmFrames);
    this.tentativeMs = new Float64Array(minConfirmFrames);
    this.tentativeClass = new Int32Array(minConfirmFrames);
    this.tentativeScore = new Float32Array(minConfirmFrames);
    this.tentativeXyxy.set(xyxy.subarray(row * 4, row * 4 + 4));
    this.tentativeMs[0] = nowMs;
    this.tentativeClass[0] = classId;
    this.tentativeScore[0] = score;
    this.firstXyxy = this.tentativeXyxy.subarray(0, 4);
    this.firstSeenMs = nowMs;
    this.lastSeenMs = nowMs;
    this.lastSeenObsMs = observedMs;
  }
}

/**
 * ByteTrack (Zhang et al., 2022) for one source: Kalman-predicted boxes are matched to
 * high-score detections first and to low-score ones second, so objects that the detector
 * only half sees (occlusion, blur) keep their tracks without low-score clutter starting new
 * ones. Unlike the reference, prediction and the lost-track buffer run on timestamps, not
 * frame counts, so frames dropped upstream do not break tracks.
 *
 * Known limits, as in the reference: there is no appearance model, so two objects of one
 * class whose boxes coincide (a head-on crossing at the same depth) can swap ids — Kalman
 * velocities carry them through partial overlaps. A new track has no velocity yet, so an
 * object that moves half its width or more between the first frames it is seen on (at
 * score 0.9; less at lower scores) fails to confirm (see `unconfirmedMatchThresh`).
 *
 * Pure and synchronous; one instance per source.
 */
export class ByteTracker {
  readonly options: Readonly<Required<ByteTrackerOptions>>;
  private readonly framePeriodMs: number;
  private pool: Track[] = [];
  private nextId = 1;
  /** Tracker time: the caller's timestamps, shifted forward each time they go back. */
  private clockMs = 0;
  private clockOffsetMs = 0;
  private lastTimestampMs = NaN;
  /** Frames' time with stalls counted as one usual gap: what motion and the lost-track buffer run on. */
  private observed = new ObservedTime(OUTAGE_MS);
  private observedMs = 0;
  private readonly solver = new LinearAssignment();
  /** The detections of the last update that no track took (PRE_TRACK_SIGHTINGS), and this update's. */
  private unclaimed: Unclaimed[] = [];
  private unclaimedNext: Unclaimed[] = [];
  /** The tracks this update started (linkUnclaimed), and its scratch: the detection rows linked, their costs and matches. */
  private readonly started: Track[] = [];
  private linkCols = new Int32Array(0);
  private linkCost = new Float64Array(0);
  private linkRowToCol = new Int32Array(UNCLAIMED_KEPT);
  /** Where each of the last update's unclaimed sightings would be now by its own motion (motionBox), xyxy. */
  private readonly linkMoved = new Float64Array(UNCLAIMED_KEPT * 4);
  private linkColToRow = new Int32Array(0);
  private linkPairs = new Int32Array(0);

  // Scratch, grown on demand and reused across updates.
  private boxes = new Float64Array(0);
  /** Each track's predicted box moved on by its velocity for its `carry` (tracks with none: unused). */
  private carriedBoxes = new Float64Array(0);
  private cost = new Float64Array(0);
  private rowToCol = new Int32Array(0);
  private colToRow = new Int32Array(0);
  private trackIdx = new Int32Array(0);
  private highIdx = new Int32Array(0);
  private lowIdx = new Int32Array(0);
  private leftIdx = new Int32Array(0);
  private detTaken = new Uint8Array(0);

  constructor(options: ByteTrackerOptions = {}) {
    const o: Required<ByteTrackerOptions> = { ...BYTE_TRACKER_DEFAULTS };
    for (const k of Object.keys(o) as Array<keyof ByteTrackerOptions>) {
      if (options[k] !== undefined) (o as Record<string, unknown>)[k] = options[k];
    }
    for (const k of [
      'trackHighThresh',
      'trackLowThresh',
      'newTrackThresh',
      'matchThresh',
      'secondMatchThresh',
      'unconfirmedMatchThresh',
    ] as const) {
      if (!(o[k] >= 0 && o[k] <= 1)) throw new RangeError(`ByteTracker: ${k} must be in [0, 1], got ${o[k]}`);
    }
    if (o.trackLowThresh > o.trackHighThresh) {
      throw new RangeError(`ByteTracker: trackLowThresh (${o.trackLowThresh}) exceeds trackHighThresh (${o.trackHighThresh})`);
    }
    if (!(o.frameRateHint > 0 && Number.isFinite(o.frameRateHint))) {
      throw new RangeError(`ByteTracker: frameRateHint must be a positive number, got ${o.frameRateHint}`);
    }
    if (!(o.lostTrackBufferMs >= 0)) {
      throw new RangeError(`ByteTracker: lostTrackBufferMs must be >= 0, got ${o.lostTrackBufferMs}`);
    }
    if (!(Number.isInteger(o.minConfirmFrames) && o.minConfirmFrames >= 1)) {
      throw new RangeError(`ByteTracker: minConfirmFrames must be an integer >= 1, got ${o.minConfirmFrames}`);
    }
    this.options = Object.freeze(o);
    this.framePeriodMs = 1000 / o.frameRateHint;
  }

  /**
   * Advances every track to `timestampMs`, associates `detections` and returns them with
   * `trackerId` set: all rows, in input order, sharing the input's column arrays; a row gets
   * the id of the confirmed track it continues, or −1 (below `trackLowThresh`, an invalid
   * box, unmatched, or its track still tentative).
   *
   * `timestampMs` is the frame's time in milliseconds (presentation time is best). Only
   * differences matter; a timestamp earlier than the previous one counts as no time elapsed.
   * The tracker's clock (`lastSeenMs` in `tracks()`) is `timestampMs` itself as long as
   * timestamps never go back; after a step back it runs on from where it was, offset.
   */
  update(detections: Detections, timestampMs: number): Detections {
    if (!Number.isFinite(timestampMs)) throw new RangeError(`ByteTracker.update: timestamp must be finite, got ${timestampMs}`);
    const realGapMs = timestampMs - this.lastTimestampMs;
    if (timestampMs < this.lastTimestampMs) {
      // Time went back (say, a source restarted): no time passes, and the clock stays put.
      this.clockOffsetMs += this.lastTimestampMs - timestampMs;
    }
    this.lastTimestampMs = timestampMs;
    const now = (this.clockMs = timestampMs + this.clockOffsetMs);
    // A stall (no frame for much longer than usual) counts as one usual gap: nothing was seen
    // meanwhile, so tracks are neither moved on by their last velocity across it nor lost for it.
    const observed = this.observed.advance(timestampMs);
    // After an outage (OUTAGE_MS without a frame: a camera down) no track goes on: someone where
    // a person stood 10 minutes earlier inherited its id (no entry, a 10-minute dwell). Ids keep
    // counting up.
    if (this.observed.afterOutage) {
      this.pool = [];
      this.unclaimed.length = 0;
    }
    const dt = (observed - this.observedMs) / this.framePeriodMs;
    // A stall counted as one usual gap (dt) lasted longer: an object that stood still is where
    // that prediction puts it, one that walked on is where its speed took it (at 100 px/s, 100 px
    // further after a 1.1 s stall: its track was lost and it got a new id). Both are tried, until
    // the track is matched again (it may be missed on the first frames back).
    const carried = !this.observed.afterOutage && realGapMs > observed - this.observedMs ? (realGapMs - (observed - this.observedMs)) / this.framePeriodMs : 0;
    this.observedMs = observed;
    const o = this.options;
    const n = detections.length;
    this.reserve(this.pool.length, n);

    // Predict every track to now; lost tracks stop changing size (reference multi_predict).
    const pool = this.pool;
    for (let i = 0; i < pool.length; i++) {
      const t = pool[i];
      if (t.state === LOST) t.kf.mean[7] = 0;
      kalmanPredict(t.kf, dt);
      kalmanBoxXyxy(t.kf, this.boxes, i);
      t.row = -1;
      t.carry += carried;
      if (t.carry > 0) {
        const b = this.boxes, a = this.carriedBoxes, sx = t.kf.mean[4] * t.carry, sy = t.kf.mean[5] * t.carry;
        for (let k = 0; k < 4; k++) a[i * 4 + k] = b[i * 4 + k] + (k % 2 === 0 ? sx : sy);
      }
    }

    // Split detections by score.
    const { xyxy, confidence } = detections;
    const high = this.highIdx;
    const low = this.lowIdx;
    let nHigh = 0;
    let nLow = 0;
    for (let i = 0; i < n; i++) {
      this.detTaken[i] = 0;
      const s = confidence[i];
      if (!(s >= o.trackLowThresh) || !validBox(xyxy, i)) continue;
      if (s >= o.trackHighThresh) high[nHigh++] = i;
      else low[nLow++] = i;
    }

    // First stage: high detections × confirmed tracks (tracked and lost).
    const tracks = this.trackIdx;
    let nTracks = 0;
    for (let i = 0; i < pool.length; i++) if (pool[i].state !== TENTATIVE) tracks[nTracks++] = i;
    this.associate(detections, tracks, nTracks, high, nHigh, o.matchThresh, o.fuseScore, now);

    // Second stage: low detections × tracks that were tracked and are still unmatched.
    let nRemain = 0;
    for (let k = 0; k < nTracks; k++) {
      const t = pool[tracks[k]];
      if (t.row < 0 && t.state === TRACKED) tracks[nRemain++] = tracks[k];
    }
    this.associate(detections, tracks, nRemain, low, nLow, o.secondMatchThresh, false, now);
    for (let k = 0; k < nRemain; k++) {
      const t = pool[tracks[k]];
      if (t.row < 0) t.state = LOST;
    }

    // Tentative tracks × high detections left over; a tentative track that misses is dropped.
    const left = this.leftIdx;
    let nLeft = 0;
    for (let k = 0; k < nHigh; k++) if (!this.detTaken[high[k]]) left[nLeft++] = high[k];
    let nTentative = 0;
    for (let i = 0; i < pool.length; i++) if (pool[i].state === TENTATIVE) tracks[nTentative++] = i;
    this.associate(detections, tracks, nTentative, left, nLeft, o.unconfirmedMatchThresh, o.fuseScore, now, TENTATIVE_BUFFER);
    for (let k = 0; k < nTentative; k++) {
      const t = pool[tracks[k]];
      if (t.row < 0) t.removed = true;
      else if (t.hits >= o.minConfirmFrames) this.confirm(t);
    }

    // New tentative tracks from confident detections nobody claimed.
    const newThresh = Math.max(o.newTrackThresh, o.trackHighThresh);
    for (let k = 0; k < nLeft; k++) {
      const d = left[k];
      if (this.detTaken[d] || confidence[d] < newThresh) continue;
      const t = new Track(detections.classId[d], confidence[d], now, observed, xyxy, d, o.minConfirmFrames);
      measure(t.kf, xyxy, d, true);
      t.row = d;
      this.detTaken[d] = STARTED;
      if (o.minConfirmFrames <= 1) this.confirm(t);
      pool.push(t);
      this.started.push(t);
    }

    this.linkUnclaimed(detections, now);

    // Lost tracks past the buffer go.
    for (const t of pool) if (t.state === LOST && observed - t.lastSeenObsMs > o.lostTrackBufferMs) t.removed = true;

    this.removeDuplicates();
    this.compact();

    const trackerId = new Int32Array(n).fill(-1);
    let origins: Map<number, TrackOrigin> | undefined;
    for (const t of this.pool) {
      if (!(t.row >= 0 && t.id > 0)) continue;
      trackerId[t.row] = t.id;
      if (t.confirmedMs === now && (t.hits > 1 || t.pre)) {
        // Its sightings before the track started (oldest first), then those while it was tentative.
        const before: { box: Float32Array; ms: number; classId: number; score: number }[] = [];
        for (let p = t.pre; p; p = p.prev) before.push(p);
        before.reverse();
        t.pre = undefined;
        for (let k = 0; k < t.hits - 1; k++) before.push({ box: t.tentativeXyxy.subarray(k * 4, k * 4 + 4), ms: t.tentativeMs[k], classId: t.tentativeClass[k], score: t.tentativeScore[k] });
        (origins ??= new Map()).set(t.id, { box: before[0]?.box ?? t.firstXyxy, ms: before[0]?.ms ?? t.firstSeenMs, before });
      }
    }
    return new Detections(detections.xyxy, detections.confidence, detections.classId, trackerId, origins);
  }

  /** Live tracks (tentative, tracked and lost) in the order they started. */
  tracks(): readonly TrackSnapshot[] {
    const out: TrackSnapshot[] = [];
    const box = new Float64Array(4);
    for (const t of this.pool) {
      kalmanBoxXyxy(t.kf, box, 0);
      out.push({
        id: t.id > 0 ? t.id : -1,
        state: STATE_NAMES[t.state],
        xyxy: [box[0], box[1], box[2], box[3]],
        classId: t.classId,
        score: t.score,
        hits: t.hits,
        ageMs: this.clockMs - t.firstSeenMs,
        lastSeenMs: t.lastSeenMs,
      });
    }
    return out;
  }

  /**
   * Carries every track over to a picture scaled by `sx` and `sy` (a source that changed its
   * resolution; detections come in the new picture's pixels from the next update): the tracks
   * keep their ids, as the objects have not changed.
   */
  rescale(sx: number, sy: number): void {
    if (!(sx > 0 && sy > 0 && Number.isFinite(sx) && Number.isFinite(sy))) throw new RangeError(`ByteTracker.rescale: factors must be positive, got ${sx}, ${sy}`);
    const scaled = new Set<Unclaimed>();
    const scale = (p: Unclaimed | undefined) => {
      for (; p && !scaled.has(p); p = p.prev) {
        scaled.add(p);
        for (let k = 0; k < 4; k++) p.box[k] *= k % 2 === 0 ? sx : sy;
      }
    };
    for (const t of this.pool) {
      kalmanScale(t.kf, sx, sy);
      for (let k = 0; k < t.tentativeXyxy.length; k++) t.tentativeXyxy[k] *= k % 2 === 0 ? sx : sy;
      scale(t.pre);
    }
    for (const u of this.unclaimed) scale(u);
  }

  /** Forgets every track and the last timestamp. Ids keep counting up: they are never reused. */
  reset(): void {
    this.pool = [];
    this.unclaimed.length = 0;
    this.clockMs = 0;
    this.clockOffsetMs = 0;
    this.lastTimestampMs = NaN;
    this.observed = new ObservedTime(OUTAGE_MS);
    this.observedMs = 0;
  }

  /**
   * Matches pool tracks `rows[0..nRows)` to detection rows `cols[0..nCols)` with costs below
   * `thresh`, and applies each match.
   */
  private associate(
    dets: Detections,
    rows: Int32Array,
    nRows: number,
    cols: Int32Array,
    nCols: number,
    thresh: number,
    fuse: boolean,
    now: number,
    buffer = 0,
  ): void {
    if (nRows === 0 || nCols === 0) return;
    const { xyxy, confidence, classId } = dets;
    const classAware = this.options.classAware;
    const cost = this.cost;
    const boxes = this.boxes;
    const pool = this.pool;
    for (let r = 0; r < nRows; r++) {
      const ti = rows[r];
      const cls = pool[ti].classId;
      const base = r * nCols;
      for (let c = 0; c < nCols; c++) {
        const d = cols[c];
        if (classAware && classId[d] !== cls) {
          cost[base + c] = Infinity;
          continue;
        }
        let iou = buffer > 0 ? bufferedIou(boxes, ti, xyxy, d, buffer) : iouXyxy(boxes, ti, xyxy, d);
        if (pool[ti].carry > 0) iou = Math.max(iou, buffer > 0 ? bufferedIou(this.carriedBoxes, ti, xyxy, d, buffer) : iouXyxy(this.carriedBoxes, ti, xyxy, d));
        cost[base + c] = 1 - (fuse ? iou * confidence[d] : iou);
      }
    }
    const matched = this.solver.solve(cost, nRows, nCols, thresh, this.rowToCol, this.colToRow);
    if (matched === 0) return;
    for (let r = 0; r < nRows; r++) {
      const c = this.rowToCol[r];
      if (c < 0) continue;
      const t = pool[rows[r]];
      const d = cols[c];
      // Matched where its speed took it: the state goes there (and its uncertainty grows for that time) before the measurement.
      if (t.carry > 0 && carriedCloser(boxes, this.carriedBoxes, rows[r], xyxy, d, buffer)) kalmanPredict(t.kf, t.carry);
      t.carry = 0;
      measure(t.kf, xyxy, d, false);
      if (t.state === LOST) t.state = TRACKED;
      if (t.state === TENTATIVE && t.hits < t.tentativeMs.length) {
        t.tentativeXyxy.set(xyxy.subarray(d * 4, d * 4 + 4), t.hits * 4);
        t.tentativeMs[t.hits] = now;
        t.tentativeClass[t.hits] = classId[d];
        t.tentativeScore[t.hits] = confidence[d];
      }
      t.classId = classId[d];
      t.score = confidence[d];
      t.hits++;
      t.lastSeenMs = now;
      t.lastSeenObsMs = this.observedMs;
      t.row = d;
      this.detTaken[d] = 1;
    }
  }

  /**
   * Links the last update's detections that no track took (PRE_TRACK_SIGHTINGS) to this update's:
   * the tracks it started take the sightings their first detection continues, and its
   * detections that no track took, scoring at least `trackLowThresh` (the UNCLAIMED_KEPT that
   * score most, whatever the row order), are kept, each continuing the sightings it does.
   * A detection continues a sighting of the same label (when class aware) that it overlaps as a
   * tentative track's box must (buffered, `unconfirmedMatchThresh`, scores aside), each sighting
   * going to one detection, the pairs that overlap most first; the detections live tracks took
   * take part, and the sightings they continue end (they were those objects'). Before,
   * a new track took the sightings it overlapped most whatever else this frame showed: a
   * person stepping in below a line beside a low-scored false positive standing above it
   * (which it overlapped) took its sightings, and was counted crossing; and a detection took
   * the sightings it overlapped most in the detector's row order, so a person walking past
   * another object could swap histories with it. O(last's × this update's unclaimed).
   */
  private linkUnclaimed(dets: Detections, now: number): void {
    const started = this.started;
    const prevList = this.unclaimed;
    const next = this.unclaimedNext;
    next.length = 0;
    const n = dets.length;
    // Every column is a distinct row of this update's: at most n of them.
    if (this.linkCols.length < n) {
      const m = grow(n);
      this.linkCols = new Int32Array(m);
      this.linkColToRow = new Int32Array(m);
    }
    const cols = this.linkCols;
    let nCols = 0;
    for (const t of started) cols[nCols++] = t.row;
    const nStarted = nCols;
    const low = this.options.trackLowThresh;
    const conf = dets.confidence;
    // The best-scoring UNCLAIMED_KEPT, in row order. Beyond that many (rare), a heap of them, the
    // worst on top. Before, the first in row order: the best only where rows come by score
    // (argus's NMS), not an end2end model's, whose person scored 0.45 in row 40 behind 40 boxes of
    // clutter at 0.15 lost all its sightings before its track.
    let i = 0;
    for (; i < n && nCols - nStarted < UNCLAIMED_KEPT; i++) {
      if (this.detTaken[i] || !(conf[i] >= low) || !validBox(dets.xyxy, i)) continue;
      cols[nCols++] = i;
    }
    if (nCols - nStarted === UNCLAIMED_KEPT && i < n) {
      const h = nStarted; // cols[h..h + UNCLAIMED_KEPT): the heap
      for (let k = (UNCLAIMED_KEPT >> 1) - 1; k >= 0; k--) siftDown(cols, h, UNCLAIMED_KEPT, k, conf);
      let replaced = false;
      for (; i < n; i++) {
        // Rows come in order: one scoring as much as the worst kept is no better.
        if (this.detTaken[i] || !(conf[i] > conf[cols[h]]) || !validBox(dets.xyxy, i)) continue;
        cols[h] = i;
        siftDown(cols, h, UNCLAIMED_KEPT, 0, conf);
        replaced = true;
      }
      if (replaced) {
        for (let k = h + 1; k < nCols; k++) {
          const v = cols[k];
          let j = k - 1;
          for (; j >= h && cols[j] > v; j--) cols[j + 1] = cols[j];
          cols[j + 1] = v;
        }
      }
    }
    const nKept = nCols;
    const nRows = prevList.length;
    // The detections live tracks took compete for the sightings too, and a sighting one of them
    // continues ends there: it was that object's (a low-scored person whose box a track took after
    // an id switch). Before, only the new tracks' and the unclaimed detections were candidates,
    // and a new track took the sightings whose own continuation a track had taken: after a
    // stage-1 id switch (two people passing close), the neighbour's new track started with the
    // other person's earlier sightings, 60 px and 10 frames away (a fuzz case: a second zone
    // entry for someone already inside).
    if (nRows > 0) for (let r = 0; r < n; r++) if (this.detTaken[r] === 1) cols[nCols++] = r;
    let matched = 0;
    if (nRows > 0 && nCols > 0) {
      if (this.linkCost.length < nRows * nCols) this.linkCost = new Float64Array(grow(nRows * nCols));
      const cost = this.linkCost;
      const classAware = this.options.classAware;
      const thresh = this.options.unconfirmedMatchThresh;
      const rowToCol = this.linkRowToCol, colToRow = this.linkColToRow;
      if (this.linkPairs.length < nRows * nCols) this.linkPairs = new Int32Array(grow(nRows * nCols));
      const pairs = this.linkPairs;
      // The pairs that overlap enough; where no sighting and no detection has two (things standing
      // apart: the usual case), they are the answer. Else the pairs that overlap most go first
      // (greedy: the solver on a crowded frame's 32 × 32 cost more than the rest of the update).
      colToRow.fill(-1, 0, nCols);
      let nPairs = 0;
      let contested = false;
      // A sighting whose object moves steadily may be where that motion takes it (motionBox) or
      // where it was (it stopped, or turned back): a detection is as near as the nearer of the two,
      // as a track's carried box is tried beside its prediction (associate). Before, only where it
      // was: a low-scored person passing close to a tracked one walking the other way had their
      // last sighting overlapped more by the other's new box than by their own, and their
      // sightings ended there (they went to the other's). A detection a live track took (from
      // nKept on) is that object where its track expects it: it ends a sighting only by where the
      // sighting was, as before. Then, matched first by motion and only after every such pair by
      // where it was: a low-scored person who walked through a line and stopped beside a tracked
      // one, or beside someone just come into view, lost their sightings to that one's box (their
      // crossing was lost, or the newcomer, who never crossed, was counted crossing).
      const moved = this.linkMoved;
      for (let r = 0; r < nRows; r++) {
        const u = prevList[r];
        rowToCol[r] = -1;
        const byMotion = motionBox(u, now, moved, r);
        for (let c = 0; c < nCols; c++) {
          const d = cols[c];
          if (classAware && u.classId !== dets.classId[d]) continue;
          let k = 1 - bufferedIou(u.box, 0, dets.xyxy, d, TENTATIVE_BUFFER);
          if (byMotion && c < nKept) k = Math.min(k, 1 - bufferedIou(moved, r, dets.xyxy, d, TENTATIVE_BUFFER));
          if (!(k < thresh)) continue;
          cost[r * nCols + c] = k;
          pairs[nPairs++] = r * nCols + c;
          if (rowToCol[r] !== -1 || colToRow[c] !== -1) contested = true;
          rowToCol[r] = c;
          colToRow[c] = r;
        }
      }
      if (contested) {
        pairs.subarray(0, nPairs).sort((a, b) => cost[a] - cost[b] || a - b);
        rowToCol.fill(-1, 0, nRows);
        colToRow.fill(-1, 0, nCols);
        for (let k = 0; k < nPairs; k++) {
          const r = (pairs[k] / nCols) | 0, c = pairs[k] - r * nCols;
          if (rowToCol[r] !== -1 || colToRow[c] !== -1) continue;
          rowToCol[r] = c;
          colToRow[c] = r;
        }
      }
      matched = nPairs;
    }
    const colToRow = this.linkColToRow;
    for (let c = 0; c < nStarted; c++) started[c].pre = matched > 0 && colToRow[c] >= 0 ? prevList[colToRow[c]] : undefined;
    started.length = 0;
    for (let c = nStarted; c < nKept; c++) {
      const i = cols[c];
      const prev = matched > 0 && colToRow[c] >= 0 ? prevList[colToRow[c]] : undefined;
      const u: Unclaimed = { box: dets.xyxy.slice(i * 4, i * 4 + 4), ms: now, classId: dets.classId[i], score: dets.confidence[i], prev, next: undefined, depth: prev ? prev.depth + 1 : 1, oldest: undefined };
      if (prev) {
        prev.next = u;
        u.oldest = prev.oldest;
        prev.oldest = undefined;
      } else u.oldest = u;
      // Only the latest (PRE_TRACK_SIGHTINGS, those of PRE_TRACK_MS, at least PRE_TRACK_MIN_SIGHTINGS):
      // the oldest go, one or two a frame, O(1) each. Before, the chain was walked from its latest
      // to its cut on every frame: 120 steps for each of up to 32 objects at 120 fps.
      while (u.depth > PRE_TRACK_SIGHTINGS || (u.depth > PRE_TRACK_MIN_SIGHTINGS && !(now - u.oldest!.ms < PRE_TRACK_MS))) {
        const o = u.oldest!;
        const n = o.next!;
        n.prev = undefined;
        o.next = undefined;
        u.oldest = n;
        u.depth--;
      }
      next.push(u);
    }
    prevList.length = 0;
    this.unclaimedNext = prevList;
    this.unclaimed = next;
  }

  private confirm(t: Track): void {
    t.id = this.nextId++;
    t.state = TRACKED;
    t.confirmedMs = this.clockMs;
  }

  /**
   * A lost track whose prediction sits on a live one (IoU > 0.85, same class when class
   * aware) describes the same object: keep whichever has the longer history (reference
   * `remove_duplicate_stracks`).
   */
  private removeDuplicates(): void {
    const pool = this.pool;
    let anyLost = false;
    for (const t of pool) if (t.state === LOST && !t.removed) anyLost = true;
    if (!anyLost) return;
    const boxes = this.boxes;
    for (let i = 0; i < pool.length; i++) kalmanBoxXyxy(pool[i].kf, boxes, i);
    const classAware = this.options.classAware;
    for (let p = 0; p < pool.length; p++) {
      const a = pool[p];
      if (a.state === LOST || a.removed) continue;
      for (let q = 0; q < pool.length; q++) {
        const b = pool[q];
        if (b.state !== LOST || b.removed) continue;
        if (classAware && a.classId !== b.classId) continue;
        if (iouXyxy(boxes, p, boxes, q) <= DUPLICATE_IOU) continue;
        if (a.lastSeenMs - a.firstSeenMs > b.lastSeenMs - b.firstSeenMs) {
          b.removed = true;
        } else {
          a.removed = true;
          break;
        }
      }
    }
  }

  private compact(): void {
    const pool = this.pool;
    let w = 0;
    for (let r = 0; r < pool.length; r++) if (!pool[r].removed) pool[w++] = pool[r];
    pool.length = w;
  }

  private reserve(tracks: number, dets: number): void {
    // New tracks are appended after prediction, but boxes are rewritten for the whole pool
    // in removeDuplicates: size for both.
    const maxTracks = tracks + dets;
    if (this.boxes.length < maxTracks * 4) {
      this.boxes = new Float64Array(grow(maxTracks) * 4);
      this.carriedBoxes = new Float64Array(this.boxes.length);
    }
    if (this.trackIdx.length < tracks) this.trackIdx = new Int32Array(grow(tracks));
    if (this.rowToCol.length < maxTracks) this.rowToCol = new Int32Array(grow(maxTracks));
    if (this.colToRow.length < dets) this.colToRow = new Int32Array(grow(dets));
    if (this.highIdx.length < dets) {
      const m = grow(dets);
      this.highIdx = new Int32Array(m);
      this.lowIdx = new Int32Array(m);
      this.leftIdx = new Int32Array(m);
      this.detTaken = new Uint8Array(m);
    }
    if (this.cost.length < tracks * dets) this.cost = new Float64Array(grow(tracks * dets));
  }
}

/**
 * How far each of an unclaimed object's last two steps must have taken it, as a share of its box's
 * larger side, for its motion to be clear (motionBox): beyond the detector's jitter (1 to 2 %).
 */
const MOTION_MIN_SHARE = 0.05;

/**
 * Where sighting `u`'s object would be at `now` (tracker time) at the pace of its last two steps,
 * written to `out` at box `r` (xyxy), when that motion is clear: two steps (three sightings in a
 * row), each more than MOTION_MIN_SHARE of its box's larger side, the same way (within about 35°)
 * at about the same pace (within a factor of 2). Else false: a standing, turning or new object is
 * matched where it was last seen. O(1), allocation free.
 */
function motionBox(u: Unclaimed, now: number, out: Float64Array, r: number): boolean {
  const p = u.prev, q = p?.prev;
  if (!p || !q) return false;
  const dt1 = u.ms - p.ms, dt2 = p.ms - q.ms;
  if (!(dt1 > 0 && dt2 > 0)) return false;
  const a = u.box, b = p.box, c = q.box;
  const v1x = (a[0] + a[2] - b[0] - b[2]) / 2 / dt1, v1y = (a[1] + a[3] - b[1] - b[3]) / 2 / dt1;
  const v2x = (b[0] + b[2] - c[0] - c[2]) / 2 / dt2, v2y = (b[1] + b[3] - c[1] - c[3]) / 2 / dt2;
  const s1 = Math.hypot(v1x, v1y), s2 = Math.hypot(v2x, v2y);
  const least = MOTION_MIN_SHARE * Math.max(a[2] - a[0], a[3] - a[1]);
  if (!(s1 * dt1 > least && s2 * dt2 > least) || s1 > 2 * s2 || s2 > 2 * s1) return false;
  if ((v1x * v2x + v1y * v2y) / (s1 * s2) < 0.8) return false;
  const g = now - u.ms, dx = ((v1x + v2x) / 2) * g, dy = ((v1y + v2y) / 2) * g;
  const o = r * 4;
  out[o] = a[0] + dx;
  out[o + 1] = a[1] + dy;
  out[o + 2] = a[2] + dx;
  out[o + 3] = a[3] + dy;
  return true;
}

/** Whether row a is kept before row b (UNCLAIMED_KEPT): a higher score, or the same and an earlier row. */
function keptBefore(conf: Float32Array, a: number, b: number): boolean {
  return conf[a] > conf[b] || (conf[a] === conf[b] && a < b);
}

/** Restores the heap of rows `a[base..base + n)` below its `k`th, the row kept last (keptBefore) on top. */
function siftDown(a: Int32Array, base: number, n: number, k: number, conf: Float32Array): void {
  for (;;) {
    const l = 2 * k + 1;
    if (l >= n) return;
    const c = l + 1 < n && keptBefore(conf, a[base + l], a[base + l + 1]) ? l + 1 : l;
    if (!keptBefore(conf, a[base + k], a[base + c])) return;
    const t = a[base + k];
    a[base + k] = a[base + c];
    a[base + c] = t;
    k = c;
  }
}

function grow(n: number): number {
  return Math.max(16, Math.ceil(n * 1.5));
}

/** IoU of box i of `a` and box j of `b`, each widened by `k` of its width and height on every side. */
function bufferedIou(a: ArrayLike<number>, i: number, b: ArrayLike<number>, j: number, k: number): number {
  const ai = i * 4, bj = j * 4;
  const aw = a[ai + 2] - a[ai], ah = a[ai + 3] - a[ai + 1];
  const bw = b[bj + 2] - b[bj], bh = b[bj + 3] - b[bj + 1];
  const ax1 = a[ai] - k * aw, ay1 = a[ai + 1] - k * ah, ax2 = a[ai + 2] + k * aw, ay2 = a[ai + 3] + k * ah;
  const bx1 = b[bj] - k * bw, by1 = b[bj + 1] - k * bh, bx2 = b[bj + 2] + k * bw, by2 = b[bj + 3] + k * bh;
  const iw = Math.min(ax2, bx2) - Math.max(ax1, bx1);
  const ih = Math.min(ay2, by2) - Math.max(ay1, by1);
  if (!(iw > 0 && ih > 0)) return 0;
  const inter = iw * ih;
  const union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
  return union > 0 ? inter / union : 0;
}

/** Whether detection `d` overlaps track `i`'s carried-on box (after a stall) more than its usual prediction. */
function carriedCloser(boxes: Float64Array, carried: Float64Array, i: number, xyxy: Float32Array, d: number, buffer: number): boolean {
  return buffer > 0 ? bufferedIou(carried, i, xyxy, d, buffer) > bufferedIou(boxes, i, xyxy, d, buffer) : iouXyxy(carried, i, xyxy, d) > iouXyxy(boxes, i, xyxy, d);
}

function validBox(xyxy: Float32Array, i: number): boolean {
  const o = i * 4;
  const w = xyxy[o + 2] - xyxy[o];
  const h = xyxy[o + 3] - xyxy[o + 1];
  return w > 0 && h > 0 && Number.isFinite(w) && Number.isFinite(h);
}

/** Starts (`initiate`) or corrects the filter with detection box i, as (cx, cy, w/h, h). */
function measure(kf: KalmanState, xyxy: Float32Array, i: number, initiate: boolean): void {
  const o = i * 4;
  const w = xyxy[o + 2] - xyxy[o];
  const h = xyxy[o + 3] - xyxy[o + 1];
  const cx = xyxy[o] + w / 2;
  const cy = xyxy[o + 1] + h / 2;
  if (initiate) kalmanInitiate(kf, cx, cy, w / h, h);
  else kalmanUpdate(kf, cx, cy, w / h, h);
}
