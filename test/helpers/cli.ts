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

/**
 * Runs the CLI with `args` and closes its stdout after the first chunk, as `| head -1` does once
 * it has its line; `after` runs then. Resolves with the exit status, the first line and stderr.
 */
export function runClosingAfterFirstLine(args: string[], after: () => Promise<void> = async () => {}, boundMs = 90_000): Promise<{ code: number | null; first: string; stderr: string }> {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, [ARGUS, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let first = '';
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    p.stdout.setEncoding('utf8').once('data', (d: string) => {
      first = d.split('\n')[0];
      p.stdout.destroy();
      after().catch(rej);
    });
    const bound = setTimeout(() => p.kill('SIGKILL'), boundMs); // a hang bound only
    p.on('error', rej);
    p.on('close', (code, signal) => {
      clearTimeout(bound);
      res({ code: code ?? (signal as unknown as number), first, stderr });
    });
  });
}

/** Whether a process of this pid exists (signal 0 reaches it; a zombie not yet reaped counts). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
