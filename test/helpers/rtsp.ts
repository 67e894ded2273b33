import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = resolve(__dirname, '../../scripts/rtsp-server.sh');

/** A real RTSP server of scripts/rtsp-server.sh (GStreamer, fed by ffmpeg publishers) on one port. */
export interface RtspServer {
  /** Runs scripts/rtsp-server.sh with this server's port (and so its own state dir). */
  rtsp(...args: string[]): Promise<string>;
  /** Publishes `file` in a loop on `path`; resolves to its URL once a frame can be read from it. */
  publish(path: string, file: string, ...flags: string[]): Promise<string>;
}

/**
 * The server a test file uses: each file that starts one has a port of its own (test files run
 * two at a time, and one of them kills and restarts its server).
 */
export function rtspServer(port: number): RtspServer {
  const p = String(port);
  const rtsp = async (...args: string[]): Promise<string> => {
    const { stdout } = await run('bash', [SCRIPT, ...args], { env: { ...process.env, RTSP_PORT: p }, timeout: 300_000 });
    return stdout.trim();
  };
  return {
    rtsp,
    async publish(path, file, ...flags) {
      const out = await rtsp('publish', path, file, '--loop', ...flags);
      const m = /RTSP_URL=(\S+)/.exec(out);
      if (!m) throw new Error(`rtsp-server.sh publish printed no URL: ${out}`);
      return m[1];
    },
  };
}
