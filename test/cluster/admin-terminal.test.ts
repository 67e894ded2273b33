/**
 * `argus cameras ls`, `argus cameras apply` and `argus cluster status` print what the cluster
 * topics and the group's members say: text that anyone who can write a topic or join the group
 * chose. Escape sequences in it are shown escaped (forTerminal), not run on the operator's
 * terminal, and a line break or a tab cannot add rows or columns.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { clusterNames, writeWorkerYaml } from '../../src/bench/cluster.js';
import { slotAssigner } from '../../src/cluster/kafkajs-membership.js';
import { ARGUS, runCommand } from '../helpers/cli.js';
import { testBrokers } from '../helpers/kafka.js';

const HOSTILE = '\x1b]0;pwned\x07\x1b[2J';
/** No raw control character but the line breaks and tabs of the output's own layout. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('argus cameras / cluster: topic and member text on the terminal (real broker)', () => {
  it('keys, owners, worker ids and labels with escape sequences and line breaks are shown escaped, on their own row', async () => {
    const brokers = await testBrokers();
    const dir = mkdtempSync(join(tmpdir(), 'argus-admin-terminal-'));
    const names = clusterNames('term');
    const yaml = writeWorkerYaml(dir, brokers, names, { slots: 2 });
    const argus = (...args: string[]) => runCommand(process.execPath, [ARGUS, ...args, '--config', yaml], { W: 'cli' }, 120_000);
    const kafka = new Kafka({ clientId: 'argus-test-terminal', brokers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    const member = kafka.consumer({ groupId: names.group, partitionAssigners: [slotAssigner({ info: () => ({ workerId: `w${HOSTILE}`, incarnation: 'i', capacity: 1, owned: [], labels: { site: `x${HOSTILE}\nfake row` }, placement: true, unreachable: [1] }), slots: () => ({ cost: () => 1, accepts: () => true }) })], sessionTimeout: 6000, heartbeatInterval: 500 });
    try {
      const added = await argus('cameras', 'add', '--id', 'cam1', '--uri', 'rtsp://h/1');
      expect(added.stderr).toBe('');
      expect(added.stdout).toMatch(/added 1/);
      await producer.connect();
      await producer.send({ topic: names.cameras, messages: [{ key: `evil${HOSTILE}`, value: JSON.stringify({ id: 'evil', uri: 'rtsp://h/x' }), partition: 0 }] });
      await producer.send({ topic: names.owners, messages: [{ key: 'cam1', value: JSON.stringify({ type: 'claim', camera: 'cam1', owner: `w9${HOSTILE}\ncam2\t0\t1\tfake\t0\t-\tclaimed`, incarnation: 'i', at: 1 }), partition: 0 }] });
      await member.connect();
      await member.subscribe({ topic: names.cameras });
      let joined!: () => void;
      const inGroup = new Promise<void>((r) => (joined = r));
      member.on(member.events.GROUP_JOIN, () => joined());
      await member.run({ eachMessage: async () => {} });
      await inGroup;

      const ls = await argus('cameras', 'ls');
      expect(ls.code).toBe(0);
      expect(ls.stdout).not.toMatch(CONTROL);
      const rows = ls.stdout.trim().split('\n');
      expect(rows).toHaveLength(3); // the header, cam1, the hostile key: no row added
      expect(rows[1]).toMatch(/^cam1\t\d\t1\tw9\\x1b\]0;pwned\\x07\\x1b\[2J\\x0acam2\\x090\\x091\\x09fake/);
      expect(rows[2]).toMatch(/^evil\\x1b\]0;pwned\\x07\\x1b\[2J\t/);

      const status = await argus('cluster', 'status');
      expect(status.code).toBe(0);
      expect(status.stdout).not.toMatch(CONTROL);
      expect(status.stdout).toContain('w\\x1b]0;pwned\\x07\\x1b[2J');
      expect(status.stdout).toContain('labels site=x\\x1b]0;pwned\\x07\\x1b[2J\\x0afake row');
      // The slots a worker reported unreachable (cluster.unreachableAfterMs), on its row: before, only --json said so.
      expect(status.stdout).toMatch(/fake row .*cameras: .*  cannot reach slot\(s\) 1$/m);

      // apply prunes the hostile key, and names it escaped.
      const file = join(dir, 'cameras.yaml');
      writeFileSync(file, 'cameras:\n  - { id: cam1, uri: "rtsp://h/1" }\n');
      const applied = await argus('cameras', 'apply', file);
      expect(applied.stdout).not.toMatch(CONTROL);
      expect(applied.stdout).toContain('-evil\\x1b]0;pwned\\x07\\x1b[2J');
    } finally {
      await member.disconnect();
      await producer.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
