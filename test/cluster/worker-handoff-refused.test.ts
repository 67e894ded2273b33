/**
 * A planned move of a camera that allows one session: the new owner connects while the old owner
 * still streams (the warm handoff), and the camera refuses it. Before, the new owner said nothing,
 * so the old owner ran on for its whole handoff budget (a third of releaseWaitMs: 1.5 s), and the
 * new owner, admitted once the release came, waited out its source's restart backoff before it
 * connected again: measured with a real broker, two workers and a one-session camera, 3.1 s from
 * the old owner's last frame to the new owner's first. Now the refused connection tells the old
 * owner at once (a "ready" record: release now), and the admitted camera connects afresh.
 * Drives the worker without a broker: its owners log writes straight into its view.
 */
import { type Observable, filter } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RELEASE_KEY_PREFIX } from '../../src/cluster/view.js';
import type { Transition } from '../../src/sources/health.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  members: Set<string> | undefined;
  running: Map<string, { claim?: { epoch: number }; stopping: boolean }>;
  pipeline: unknown;
  owners: unknown;
}

const rec = (v: unknown) => Buffer.from(JSON.stringify(v));

/** Worker w1 given cam0's slot while w0 (in the group) holds an open claim of it: w1 claims and connects on standby. */
async function handoff() {
  const { w, i, settle, write } = await drivenWorker<Internals>();
  const owners = 'argus.owners';
  let offset = 0;
  const ready: string[] = [];
  let attaches = 0;
  i.pipeline = {
    attach: (_src: unknown, stop$: Observable<void>) => {
      attaches++;
      return stop$.pipe(filter(() => false));
    },
  };
  i.owners = {
    claim: async (ids: string[]) =>
      ids.map((camera) => {
        const epoch = offset++;
        i.view.ingest(owners, 0, camera, rec({ type: 'claim', camera, owner: 'w1', incarnation: w.incarnation, at: 1 }), String(epoch));
        return epoch;
      }),
    release: async (camera: string, epoch: number) => i.view.ingest(owners, 0, `${RELEASE_KEY_PREFIX}${camera}`, rec({ type: 'release', camera, owner: 'w1', incarnation: w.incarnation, epoch, at: 2 }), String(offset++)),
    ready: async (camera: string) => void ready.push(camera),
  };
  // w0 holds cam0 (epoch 0) and is in the group: a planned move, w1 waits for its release.
  i.view.ingest(owners, 0, 'cam0', rec({ type: 'claim', camera: 'cam0', owner: 'w0', incarnation: 'i0', at: 1 }), String(offset++));
  i.members = new Set(['w0/i0', `w1/${w.incarnation}`]);
  write('cam0', { uri: 'rtsp://h/x' });
  await settle();
  expect(i.running.get('cam0')?.claim).toBeUndefined(); // connected, waiting for w0's release (claimed once it comes)
  expect(attaches).toBe(1);
  const status = (state: Transition['state'], reason: string) => w.publishesStatus({ source: 'cam0', state, previous: 'starting', reason, at: Date.now(), attempt: 1 });
  const released = async () => {
    // w0's release (epoch 1); w1 then claims (epoch 2) and starts under that claim.
    i.view.ingest(owners, 0, `${RELEASE_KEY_PREFIX}cam0`, rec({ type: 'release', camera: 'cam0', owner: 'w0', incarnation: 'i0', epoch: 0, at: 2 }), String(offset++));
    await settle();
  };
  return { w, i, ready, attaches: () => attaches, status, released };
}

describe('Worker: a handoff whose new connection the camera refuses', () => {
  it('tells the old owner at once, and once admitted connects afresh instead of waiting out its restart backoff', async () => {
    const h = await handoff();
    expect(h.status('reconnecting', '453 Not Enough Bandwidth; retry 1 in 0.3 s')).toBe(false); // held back: w0 still publishes its own
    expect(h.ready).toEqual(['cam0']); // w0 stops and releases now, not after its handoff budget
    h.status('reconnecting', '453 Not Enough Bandwidth; retry 2 in 0.5 s');
    expect(h.ready).toEqual(['cam0']); // said once
    await h.released();
    expect(h.attaches()).toBe(2); // the refused chain (in its backoff) was stopped, a new one started
    expect(h.i.running.get('cam0')?.claim).toMatchObject({ owner: 'w1', epoch: 2 });
    expect(h.w.cameras().map((c) => c.id)).toEqual(['cam0']);
  });

  it('a standby connection that streams is admitted as it is (the warm start), and its first frame alone says ready', async () => {
    const h = await handoff();
    h.status('streaming', 'first frame');
    expect(h.ready).toEqual([]); // the first frame's ready is written by the chain's gate, not by a status
    await h.released();
    expect(h.attaches()).toBe(1);
    expect(h.i.running.get('cam0')?.claim).toMatchObject({ owner: 'w1', epoch: 2 });
  });

  it('a refused connection that later streams (the old owner left first) is kept', async () => {
    const h = await handoff();
    h.status('reconnecting', 'Connection refused; retry 1 in 0.3 s');
    h.status('streaming', 'frames again after 1 attempt');
    await h.released();
    expect(h.attaches()).toBe(1);
    expect(h.i.running.get('cam0')?.claim).toMatchObject({ owner: 'w1', epoch: 2 });
  });
});
