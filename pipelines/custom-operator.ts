/**
 * Extending the pipeline with operators of your own (README, "Extending the pipeline").
 *
 *   npx tsx pipelines/custom-operator.ts [pipeline.yaml] [--max-frames N]
 *
 * runs a pipeline (default: the demo) with three additions between the rules and the sinks:
 * a filter (boxes too small to be trusted are dropped), a custom rule (an alert when a crowd
 * of people is in view) and a side sink (a per-second people count on stderr). Alerts raised
 * here are published like any rule's: id, snapshot, outbox, Kafka, WebSocket, JSONL.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { map, pipe, tap } from 'rxjs';
import type { AlertDraft, Extension, FrameResult } from '../src/index.js';

/** Drops boxes smaller than `minArea` square source pixels. */
export const minBoxArea =
  (minArea: number): Extension =>
  () =>
    map((r) => {
      const { xyxy, length } = r.detections;
      const keep: boolean[] = [];
      for (let i = 0; i < length; i++) keep.push((xyxy[i * 4 + 2] - xyxy[i * 4]) * (xyxy[i * 4 + 3] - xyxy[i * 4 + 1]) >= minArea);
      return keep.every(Boolean) ? r : { ...r, detections: r.detections.select(keep) };
    });

/** A rule of your own: at least `people` persons in the frame raise one alert, then at most one per `cooldownS` seconds of video. */
export const crowdRule =
  (people: number, cooldownS: number): Extension =>
  ({ config, labels }) => {
    const person = labels.indexOf('person');
    let lastAt = -Infinity;
    return map((r: FrameResult) => {
      let n = 0;
      let first = -1;
      for (let i = 0; i < r.detections.length; i++) {
        if (r.detections.classId[i] !== person) continue;
        n++;
        if (first < 0) first = i;
      }
      if (n < people || r.frame.pts - lastAt < cooldownS) return r;
      lastAt = r.frame.pts;
      const alert: AlertDraft = { rule: 'crowd', severity: 'warning', event: 'crowd.detected', message: `${config.id}: ${n} people in view`, row: first, people: n };
      return { ...r, alerts: [...r.alerts, alert] };
    });
  };

/** A side sink: calls `report(source, people)` once per second of video with the most people seen in that second. */
export const peoplePerSecond =
  (report: (source: string, people: number) => void): Extension =>
  ({ config, labels }) => {
    const person = labels.indexOf('person');
    let second = -1;
    let most = 0;
    return tap((r: FrameResult) => {
      let n = 0;
      for (let i = 0; i < r.detections.length; i++) if (r.detections.classId[i] === person) n++;
      const s = Math.floor(r.frame.pts);
      if (s !== second) {
        if (second >= 0) report(config.id, most);
        second = s;
        most = 0;
      }
      most = Math.max(most, n);
    });
  };

/** The three together, in order. */
export const extension: Extension = (source) =>
  pipe(
    minBoxArea(24 * 24)(source),
    crowdRule(2, 10)(source),
    peoplePerSecond((id, n) => process.stderr.write(`[people] ${id}: ${n}\n`))(source),
  );

/**
 * Run as a program, not imported (as the tests import it): node was given this file, by whatever
 * path (one with a space, or through a link). `import.meta.url === \`file://${argv[1]}\`` was
 * false for both (the URL is percent-encoded and the link resolved), and the script then did
 * nothing and exited 0.
 */
function isMain(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isMain()) {
  const { loadPipeline, pipelineBaseDir, runPipeline } = await import('../src/index.js');
  const { createLogger, logFn } = await import('../src/core/log.js');
  const { ArgusError, endingOf, ErrorCodes } = await import('../src/core/errors.js');
  try {
    const args = process.argv.slice(2);
    const mf = args.indexOf('--max-frames');
    const maxFrames = mf >= 0 ? Number(args.splice(mf, 2)[1]) : undefined;
    if (maxFrames !== undefined && !(Number.isSafeInteger(maxFrames) && maxFrames >= 1)) throw new ArgusError(ErrorCodes.USAGE, '--max-frames: expected a whole number from 1');
    const unknown = args.find((a) => a.startsWith('-'));
    if (unknown !== undefined || args.length > 1) throw new ArgusError(ErrorCodes.USAGE, `${unknown ?? args[1]}: unexpected; usage: npx tsx pipelines/custom-operator.ts [pipeline.yaml] [--max-frames N]`);
    const file = args[0] ?? fileURLToPath(new URL('./demo.yaml', import.meta.url));
    const config = await loadPipeline(file);
    const summary = await runPipeline(config, { baseDir: pipelineBaseDir(file), extend: extension, maxFrames, status: false, log: logFn(createLogger()) });
    process.stdout.write(`${JSON.stringify({ frames: summary.frames, alerts: summary.alerts })}\n`);
  } catch (e) {
    // A coded error as argus's commands end on one (a missing pipeline file, a wrong flag), not a stack trace.
    const { code, message, status } = endingOf(e);
    process.stderr.write(`custom-operator: ${code}: ${message}\n`);
    process.exitCode = status;
  }
}
