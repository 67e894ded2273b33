/**
 * A worker's own maps keyed by camera id keep no entry for a camera it no longer runs or wants:
 * cameras added and removed over months (or moved to other workers) left one behind each in its
 * claims, and a handoff cut short by a fence left the tick reconciling 10 times a second for good.
 * Drives the worker without a broker: its owners log writes straight into its view.
 */
import { describe, expect, it } from 'vitest';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  claims: Map<string, unknown>;
  pending: Map<string, number>;
  waits: Map<string, number>;
  handoffs: Set<string>;
  heldStatus: Map<string, unknown>;
}

async function worker() {
  const { w, i, settle, write } = await drivenWorker<Internals>();
  return { w, i, settle, add: (id: string) => write(id, { uri: 'rtsp://h/x' }), remove: (id: string) => write(id, null) };
}

describe('Worker: cameras that come and go leave nothing behind', () => {
  it('500 cameras started here and removed again: no claim, pending claim, wait or owners-topic entry is left; a camera still running keeps its claim', async () => {
    const { w, i, settle, add, remove } = await worker();
    add('stays');
    await settle();
    expect(w.claimOf('stays')).toMatchObject({ owner: 'w1' });
    for (let k = 0; k < 500; k++) {
      add(`cam${k}`);
      await settle();
      expect(w.cameras().map((c) => c.id)).toContain(`cam${k}`); // it ran here under its claim
      remove(`cam${k}`);
      await settle();
    }
    expect(w.cameras().map((c) => c.id)).toEqual(['stays']);
    expect([...i.claims.keys()]).toEqual(['stays']);
    expect([i.running.size, i.pending.size, i.waits.size, i.handoffs.size, i.heldStatus.size]).toEqual([1, 0, 0, 0, 0]);
    expect([...i.view.owners.keys()]).toEqual(['stays']);
    expect([i.view.open.size, i.view.connected.size]).toEqual([1, 0]);
  });

  it('cameras whose slot went to another worker are forgotten once stopped here', async () => {
    const { i, settle, add } = await worker();
    for (let k = 0; k < 50; k++) add(`cam${k}`);
    await settle();
    expect(i.claims.size).toBe(50);
    i.assigned = new Set([1]); // slot 0 is another worker's now (it read no "ready": the handoff runs out)
    (i as unknown as { c: { releaseWaitMs: number } }).c.releaseWaitMs = 0;
    await settle();
    expect([i.running.size, i.claims.size, i.handoffs.size]).toEqual([0, 0, 0]);
  });

  it('a handoff whose camera a fence stopped is dropped', async () => {
    const { i, settle } = await worker();
    i.handoffs.add('gone');
    await settle();
    expect(i.handoffs.size).toBe(0);
  });
});
