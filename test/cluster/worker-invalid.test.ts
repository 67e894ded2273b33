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

  it('tells the group it cannot run its slot, so that a worker whose environment has the variable takes it; not for a record no worker can use', async () => {
    // Each worker resolves the variables from its own environment: one set on two workers of three
    // (a worker added later, a secret rolled out one machine at a time) left the camera dark for
    // good where its slot was on the third, though the other two could run it.
    const { i, settle, write } = await worker();
    let asked = 0;
    (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => void asked++;
    const w = i as unknown as { memberInfo: () => { unreachable: number[] } };
    // A variable of no ARGUS_CAMERA_ name is refused by every worker alike, as is a disabled camera: nothing to tell.
    write('odd', { uri: 'rtsp://viewer:${env:HOME}@192.0.2.12/s' });
    write('off', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.13/s', enabled: false });
    await settle();
    expect(w.memberInfo().unreachable).toEqual([]);
    write('dock', { uri: 'rtsp://${env:ARGUS_CAMERA_DOCK_USER}:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    expect(w.memberInfo().unreachable).toEqual([0]);
    expect(asked).toBe(1);
    // Its slot gone to another worker: still said (it would come back here to run nowhere).
    i.assigned = new Set();
    await settle();
    expect(w.memberInfo().unreachable).toEqual([0]);
    write('dock', { uri: 'rtsp://${env:ARGUS_CAMERA_DOCK_USER}@192.0.2.10/s' });
    await settle();
    expect(w.memberInfo().unreachable).toEqual([]);
    expect(asked).toBe(1);
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
