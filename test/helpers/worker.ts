import { NEVER } from 'rxjs';

/** The parts of a Worker (src/cluster/worker.ts) that joinedWithCam0 sets. */
export interface JoinableWorker {
  pipeline: unknown;
  membership: unknown;
  joined: boolean;
  assigned: Set<number>;
  view: { cameras: Map<string, unknown> };
}

/**
 * Makes a Worker, driven without a broker, one that has joined its group, holds slot 0 and sees
 * camera cam0 in it (whose chain never ends): its next reconcile() claims cam0 from its owners.
 */
export function joinedWithCam0(i: JoinableWorker): void {
  i.pipeline = { attach: () => NEVER };
  i.membership = { lastAlive: performance.now(), requestRebalance: async () => {}, rejoin: async () => {}, stop: async () => {} };
  i.joined = true;
  i.assigned = new Set([0]);
  i.view.cameras.set('cam0', { id: 'cam0', slot: 0, text: '{}', offset: '0', definition: { source: { enabled: true } } });
}
