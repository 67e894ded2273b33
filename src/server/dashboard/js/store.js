/** The page's shared state: the connection's flags, the pipeline's stages and model, and one record per source. */
import { now } from './clock.js';
import { DEFAULT_STAGES } from './stages.js';

/** A source whose last frame (or detections message) is older than this is shown as having none. */
export const FRAME_STALE_MS = 3000;

export const app = {
  sources: new Map(),
  stages: DEFAULT_STAGES.slice(),
  model: null,
  connected: false,
  connectedAt: 0,
  attempt: 0, // connection attempts since the last hello
  subscribedFrames: false,
  askedFrames: true,
  run: undefined, // the run (hello's `run`) this page is on: undefined before its first hello, null when the server does not say
  instance: undefined, // the hub (hello's `instance`) this page is on, as `run`
};

/** A source's record before anything about it arrived; `el` is set to its tile's elements. */
export function newSource(id) {
  return {
    id,
    state: 'unknown',
    reason: '',
    attempt: 0,
    code: '',
    detail: '',
    statusAt: -Infinity, // performance.now() of the last status message
    reasonAt: 0, // performance.now() when the reason was said (tile-state.js, liveReason); 0: not yet
    createdAt: now(),
    srcW: 0,
    srcH: 0,
    fps: NaN,
    zones: [],
    lines: [],
    apiStats: null,
    apiStatsAt: 0,
    // frames
    frames: 0,
    frameSeq: -1,
    jpegW: 0,
    jpegH: 0,
    lastFrameAt: 0,
    decodeToken: 0,
    shownToken: 0,
    // detections
    dets: [],
    lastDetAt: 0,
    analytics: null,
    dropped: NaN,
    e2e: [],
    pipe: [], // recent pipeline latencies (captured → hand-off)
    producedBy: '', // what the latest message's stamps.produced is
    seconds: new Map(), // client second → e2e values received in it
    secondP50: new Map(), // completed second → p50
    stageRecent: [],
    rate: [], // {t, seq}
    lastAlertAt: 0,
    overlayDirty: true,
    // On screen (its tile's picture intersects the viewport): only visible tiles draw their overlay
    // and chart; one scrolled into view draws its latest state then (tile.js). False until the
    // IntersectionObserver's first report, which comes for every tile.
    visible: false,
    // The newest `frame` message that came while off screen (decoded when the tile shows), and
    // what to do then (frames.js).
    pendingFrame: null,
    pendingAt: 0,
    onVisible: null,
    chartDirty: false,
    el: null,
  };
}
