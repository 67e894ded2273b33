import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = resolve(__dirname, '../../scripts/rtsp-server.sh');
/** The tests' RTSP server port (the soak script uses another). */
export const RTSP_PORT = Number(process.env.RTSP_PORT ?? 18554);

/** Runs scripts/rtsp-server.sh (a real RTSP server fed by ffmpeg publishers). */
export async function rtsp(...args: string[]): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, ...args], { env: { ...process.env, RTSP_PORT: String(RTSP_PORT) }, timeout: 300_000 });
  return stdout.trim();
}

export async function publish(path: string, file: string, ...flags: string[]): Promise<string> {
  const out = await rtsp('publish', path, file, '--loop', ...flags);
  const m = /RTSP_URL=(\S+)/.exec(out);
  if (!m) throw new Error(`rtsp-server.sh publish printed no URL: ${out}`);
  return m[1];
}
