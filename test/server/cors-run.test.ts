/**
 * The API routes' CORS as a run wires it (pipeline/run.ts): server.allowedOrigins is the
 * server's, not the WebSocket sink's. With the sink disabled, /api/sources answered no allowed
 * origin (no Access-Control-Allow-Origin, its preflight 403): a page of that origin, which
 * polls /api/sources with the token, saw a network error.
 */
import { describe, expect, it } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { PERSON_VIDEO } from '../helpers/assets.js';

const ALLOWED = 'http://viewer.example:8080';
const TOKEN = 's3cret';

describe('CORS of a run whose WebSocket sink is disabled', () => {
  it('/api/sources answers an allowed origin (its preflight, its 200, its 401) and no other', async () => {
    const config = PipelineSchema.parse({
      sources: [{ id: 'lobby', uri: PERSON_VIDEO, rate: 'fast' }],
      model: { warmupRuns: 1 },
      server: { port: 0, token: TOKEN, allowedOrigins: [ALLOWED] },
      sinks: { websocket: { enabled: false } },
      alerts: { snapshot: { mode: 'none' } },
    });
    const ac = new AbortController();
    let done: Promise<unknown> | undefined;
    const running = await new Promise<RunningPipeline>((resolve, reject) => {
      done = runPipeline(config, { status: false, signal: ac.signal, onReady: resolve });
      done.catch(reject);
    });
    try {
      expect(running.websocket).toBeUndefined();
      const base = running.server!.url;
      const pre = await fetch(`${base}/api/sources`, { method: 'OPTIONS', headers: { origin: ALLOWED, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } });
      expect([pre.status, pre.headers.get('access-control-allow-origin')]).toEqual([204, ALLOWED]);
      const ok = await fetch(`${base}/api/sources`, { headers: { origin: ALLOWED, authorization: `Bearer ${TOKEN}` } });
      expect([ok.status, ok.headers.get('access-control-allow-origin')]).toEqual([200, ALLOWED]);
      expect(((await ok.json()) as { sources: { id: string }[] }).sources.map((s) => s.id)).toEqual(['lobby']);
      const no = await fetch(`${base}/api/sources`, { headers: { origin: ALLOWED } });
      expect([no.status, no.headers.get('access-control-allow-origin')]).toEqual([401, ALLOWED]);
      const other = await fetch(`${base}/api/sources`, { headers: { origin: 'http://evil.example', authorization: `Bearer ${TOKEN}` } });
      expect([other.status, other.headers.get('access-control-allow-origin')]).toEqual([200, null]);
      const otherPre = await fetch(`${base}/api/sources`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'GET' } });
      expect([otherPre.status, otherPre.headers.get('access-control-allow-origin')]).toEqual([403, null]);
    } finally {
      ac.abort();
      await done?.catch(() => {});
    }
  }, 120_000);
});
