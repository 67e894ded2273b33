/**
 * A camera of the worker's slots, enabled as written, whose record the worker cannot use (a
 * `${env:ARGUS_CAMERA_…}` its environment lacks) runs nowhere; `argus cameras ls`, which reads the
 * records without the workers' environments, can only call it waiting. The worker says why, once
 * per record: before, it said nothing, and an edit that added an unset variable stopped a running
 * camera without a word. Drives the worker without a broker.
 */
import { describe, expect, it } from 'vitest';
import type { LogLevel } from '../../src/core/log.js';
import { drivenWorker } from '../helpers/worker.js';

async function worker() {
  const lines: { msg: string; fields?: Record<string, unknown>; level?: LogLevel }[] = [];
  // This worker's environment: the dock camera's user, not its password.
  const { i, settle, write } = await drivenWorker({ env: { ARGUS_CAMERA_DOCK_USER: 'viewer' }, log: (msg, fields, level) => lines.push({ msg, fields, level }) });
  const said = () => lines.filter((l) => l.level === 'error' && /runs nowhere/.test(l.msg));
  return { i, settle, write: (id: string, v: Record<string, unknown>) => write(id, v), said };
}

describe('Worker: a camera of its slots whose record it cannot use', () => {
  it('is logged once, coded, naming the camera and the variable; again only when its record changes', async () => {
    const { i, settle, write, said } = await worker();
    write('dock', { uri: 'rtsp://${env:ARGUS_CAMERA_DOCK_USER}:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    await settle();
    expect(i.running.has('dock')).toBe(false);
    expect(said()).toHaveLength(1);
    expect(said()[0].msg).toMatch(/camera dock \(slot 0\) runs nowhere.*ARGUS_CAMERA_DOCK_PASSWORD/);
    expect(said()[0].fields).toMatchObject({ camera: 'dock', code: 'VAP_ERR_CONFIG' });
    write('dock', { uri: 'rtsp://${env:ARGUS_CAMERA_DOCK_USER}:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.11/s' });
    await settle();
    expect(said()).toHaveLength(2);
  });

  it('an edit that makes a running camera unusable stops it and says why', async () => {
    const { i, settle, write, said } = await worker();
    write('dock', { uri: 'rtsp://192.0.2.10/s' });
    await settle();
    expect(i.running.has('dock')).toBe(true);
    expect(said()).toHaveLength(0);
    write('dock', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    expect(i.running.has('dock')).toBe(false);
    expect(said()).toHaveLength(1);
  });

  it('says nothing of a disabled camera, nor of one in a slot it does not hold', async () => {
    const { settle, write, said, i } = await worker();
    write('off', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s', enabled: false });
    await settle();
    i.assigned = new Set([1]);
    write('elsewhere', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    expect(said()).toHaveLength(0);
  });
});
