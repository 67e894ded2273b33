import { loadModelManifest, resolveModelFile } from '../../src/assets/catalog.js';
import { sharedBrokerSetup } from './kafka.js';
import { claimPortOffset } from './ports.js';

/**
 * Runs once before the test files.
 *
 * Chooses the run's test ports (helpers/ports.ts): the first offset no other test run holds,
 * unless ARGUS_TEST_PORT_OFFSET is set. Test files see it in that variable.
 *
 * With ARGUS_TEST_KAFKA=start (the test command sets it), starts the shared Kafka broker on
 * KAFKA_PORT (default 19092 plus the offset); test files see it in KAFKA_BROKERS. A broker the
 * run started (here or in a test file) is stopped at the end, one that ran before never
 * (helpers/kafka.ts, sharedBrokerSetup).
 *
 * Makes the derived YOLOX-Nano variants (dynamic batch, fp16, int8) if the cache lacks them. On
 * a fresh clone that is a Python environment from PyPI plus the conversion: 78 s on this 2-core
 * machine idle, over two minutes with two busy processes beside it. Done here, that cost no
 * longer lands inside whichever test first asks for a variant (a worker test once ran past its
 * bound that way). It runs beside the broker's start. A failure of either is printed, not
 * thrown: the tests that need it then fail with the cause, the others still run.
 */
export default async function setup(): Promise<() => Promise<void>> {
  let release = async (): Promise<void> => {};
  if (process.env.ARGUS_TEST_PORT_OFFSET === undefined) {
    const { offset, lock } = await claimPortOffset();
    process.env.ARGUS_TEST_PORT_OFFSET = String(offset);
    if (offset !== 0) console.log(`global setup: another test run holds the default ports; this run's are ${offset} higher (19092 → ${19092 + offset})`);
    release = () => new Promise<void>((r) => lock.close(() => r()));
  }
  let stopBroker = async (): Promise<void> => {};
  const kafka = async (): Promise<void> => {
    stopBroker = await sharedBrokerSetup();
  };
  const models = async (): Promise<void> => {
    const t0 = Date.now();
    try {
      const { manifest } = await loadModelManifest('yolox-nano-dyn');
      await resolveModelFile(manifest, { log: (m) => console.log(`global setup: ${m}`) });
      const s = (Date.now() - t0) / 1000;
      if (s > 1) console.log(`global setup: derived models ready in ${s.toFixed(1)} s`);
    } catch (e) {
      console.error(`global setup: could not derive the YOLOX-Nano variants: ${(e as Error).message}`);
    }
  };
  await Promise.all([kafka(), models()]);
  return async () => {
    await stopBroker();
    await release();
  };
}
