/**
 * An argus worker's /metrics: the cameras it reports unreachable (cluster.unreachableAfterMs) and
 * the reports and rebalances it asked for, beside its claims and fencings. Before, the reports were
 * on /healthz and `argus cluster status --json` only: a Prometheus alert on a camera a worker
 * cannot reach had nothing to read.
 */
import { describe, expect, it } from 'vitest';
import { Metrics, type ClusterMetricsState } from '../../src/server/metrics.js';

describe('an argus worker on /metrics', () => {
  it('exports the cameras it reports unreachable (held or moved away) and the reports and rebalances it asked for', async () => {
    const state: ClusterMetricsState = {
      worker: 'w1',
      cameras: [{ id: 'dock', epoch: 4 }],
      lease: true,
      counters: { claims: 3, releases: 1, fencings: 0, fencedFrames: 0, forcedClaims: 0, rebalancesAsked: 2, unreachableReports: 2 },
      unreachable: [{ id: 'gate', here: true }, { id: 'yard', here: false }],
      view: { cameras: 3, refused: 0 },
      notRun: { refusedHere: 2, refusedRecord: 1, envMissing: 3 },
    };
    const text = await new Metrics({ stats: () => [], provider: 'cpu', cluster: () => state }).scrape();
    expect(text).toMatch(/^argus_cluster_events_total\{event="unreachable_reports"\} 2$/m);
    expect(text).toMatch(/^argus_cluster_events_total\{event="rebalances_asked"\} 2$/m);
    expect(text).toMatch(/^argus_cluster_unreachable\{source="gate",held="1"\} 1$/m);
    expect(text).toMatch(/^argus_cluster_unreachable\{source="yard",held="0"\} 1$/m);
    // The cameras it does not run for their record, counted (no camera ids: bounded series).
    expect(text).toMatch(/^argus_cluster_cameras_unusable\{scope="here"\} 2$/m);
    expect(text).toMatch(/^argus_cluster_cameras_unusable\{scope="record"\} 1$/m);
    expect(text).toMatch(/^argus_cluster_cameras_env_missing 3$/m);
    // A report that ended leaves no series behind.
    state.unreachable = [{ id: 'yard', here: false }];
    const later = await new Metrics({ stats: () => [], provider: 'cpu', cluster: () => state }).scrape();
    expect(later).not.toMatch(/argus_cluster_unreachable\{source="gate"/);
  });
});
