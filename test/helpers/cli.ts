import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { MIRROR } from './assets.js';

export const ROOT = resolve(__dirname, '../..');
export const ARGUS = resolve(ROOT, 'bin/argus.js');

/**
 * Bound on one run that loads the real model (a CLI command, a pipeline, a wait for its first
 * frames or alerts): a few seconds idle, minutes on a busy 2-core machine. It only ends a hang;
 * no test asserts on how long a run took.
 */
export const MODEL_RUN_TIMEOUT_MS = 600_000;

/** Runs a command in the repository root with the asset mirror set; killed after `timeoutMs`. */
export function runCommand(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = MODEL_RUN_TIMEOUT_MS): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ARGUS_MIRROR: MIRROR, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', rej);
    p.on('close', (code) => {
      clearTimeout(t);
      res({ code, stdout, stderr });
    });
  });
}
