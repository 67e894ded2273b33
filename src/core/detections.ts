/** Where and when the tracker first saw a track's object (see `Detections.trackOrigins`). */
export interface TrackOrigin {
  /** The first sighting's box, xyxy (the first of `before`, when given). */
  readonly box: Float32Array;
  /** The time of that frame, ms (the tracker's timestamps: the frames' pts). */
  readonly ms: number;
  /**
   * Every sighting before the frame that confirmed the track, first to last (the first is
   * `box` and `ms`): the detections before the track started that scored too little to start
   * one (ByteTracker's PRE_TRACK_SIGHTINGS), then those while it was being confirmed. The
   * object may have been seen whole only after its first box (cut off by the picture's border, say). Absent: the first only. With
   * each, the detector's label and score then (absent: not known), so a defect rule can count
   * the frames an item was seen on before it had an id.
   */
  readonly before?: readonly { readonly box: Float32Array; readonly ms: number; readonly classId?: number; readonly score?: number }[];
}

/**
 * Columnar detections over typed arrays: row i is box `xyxy[4i..4i+3]`, `confidence[i]`,
 * `classId[i]` and, once tracked, `trackerId[i]`. Selecting rows returns a new container, so
 * NMS, class filters and zone masks are all "pick these rows".
 */
export class Detections {
  readonly length: number;

  constructor(
    /** n×4 boxes, x1 y1 x2 y2. */
    readonly xyxy: Float32Array,
    readonly confidence: Float32Array,
    readonly classId: Int32Array,
    /** Track ids (−1 for none), present once a tracker has run. */
    readonly trackerId?: Int32Array,
    /**
     * Tracks confirmed on this frame (they get their id now, some frames after the detector
     * first saw them): track id → where and when the tracker first saw the object, so a line
     * can tell which side it came from and a zone when it came. Absent when no track was confirmed.
     */
    readonly trackOrigins?: ReadonlyMap<number, TrackOrigin>,
  ) {
    const n = confidence.length;
    if (xyxy.length !== n * 4) {
      throw new RangeError(`Detections: xyxy has ${xyxy.length} values, expected ${n * 4} for ${n} rows`);
    }
    if (classId.length !== n) {
      throw new RangeError(`Detections: classId has ${classId.length} rows, expected ${n}`);
    }
    if (trackerId && trackerId.length !== n) {
      throw new RangeError(`Detections: trackerId has ${trackerId.length} rows, expected ${n}`);
    }
    this.length = n;
  }

  static empty(): Detections {
    return EMPTY;
  }

  /** Rows by index list (in the order given) or by a boolean mask of length n. */
  select(rows: ArrayLike<number> | ArrayLike<boolean>): Detections {
    const idx = toIndices(rows, this.length);
    const n = idx.length;
    if (n === 0) return EMPTY;
    const xyxy = new Float32Array(n * 4);
    const confidence = new Float32Array(n);
    const classId = new Int32Array(n);
    const trackerId = this.trackerId ? new Int32Array(n) : undefined;
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      if (i < 0 || i >= this.length) throw new RangeError(`Detections.select: row ${i} out of range 0..${this.length - 1}`);
      xyxy.set(this.xyxy.subarray(i * 4, i * 4 + 4), k * 4);
      confidence[k] = this.confidence[i];
      classId[k] = this.classId[i];
      if (trackerId) trackerId[k] = this.trackerId![i];
    }
    return new Detections(xyxy, confidence, classId, trackerId, this.trackOrigins);
  }

  /** Concatenates containers; the result has track ids only if every non-empty input has. */
  static merge(list: readonly Detections[]): Detections {
    const parts = list.filter((d) => d.length > 0);
    if (parts.length === 0) return EMPTY;
    if (parts.length === 1) return parts[0];
    const n = parts.reduce((s, d) => s + d.length, 0);
    const tracked = parts.every((d) => d.trackerId);
    const xyxy = new Float32Array(n * 4);
    const confidence = new Float32Array(n);
    const classId = new Int32Array(n);
    const trackerId = tracked ? new Int32Array(n) : undefined;
    let o = 0;
    for (const d of parts) {
      xyxy.set(d.xyxy, o * 4);
      confidence.set(d.confidence, o);
      classId.set(d.classId, o);
      if (trackerId) trackerId.set(d.trackerId!, o);
      o += d.length;
    }
    const withOrigins = parts.filter((d) => d.trackOrigins);
    const origins = withOrigins.length === 0 ? undefined : withOrigins.length === 1 ? withOrigins[0].trackOrigins : new Map(withOrigins.flatMap((d) => [...d.trackOrigins!]));
    return new Detections(xyxy, confidence, classId, trackerId, origins);
  }
}

const EMPTY = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));

function toIndices(rows: ArrayLike<number> | ArrayLike<boolean>, n: number): ArrayLike<number> {
  if (rows.length > 0 && typeof rows[0] === 'boolean') {
    if (rows.length !== n) throw new RangeError(`Detections.select: mask has ${rows.length} entries, expected ${n}`);
    const out: number[] = [];
    for (let i = 0; i < n; i++) if (rows[i]) out.push(i);
    return out;
  }
  return rows as ArrayLike<number>;
}
