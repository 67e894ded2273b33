// argus bench --live-uri: the first source's settings on another uri, checked again as the config is.
import { describe, expect, it } from 'vitest';
import { withSource } from '../../src/bench/bench.js';
import { PipelineSchema, SourceSchema } from '../../src/config/schema.js';

describe('bench: the source it measures', () => {
  it("takes the first source's settings but its tls (that camera's), and refuses an rtsps:// uri those settings would run unchecked (the relay off)", () => {
    const config = PipelineSchema.parse({ sources: [{ id: 'a', uri: 'rtsps://cam-a/x', tls: { fingerprint: 'ab'.repeat(32) }, rtspTransport: 'tcp' }] });
    const other = withSource(config, 'rtsps://cam-b/y', 'native', false);
    expect(other.sources[0]).toMatchObject({ id: 'bench', uri: 'rtsps://cam-b/y', tls: { verify: true } });
    expect(other.sources[0].tls.fingerprint).toBeUndefined();
    // (RTSP tunnelled in HTTP is the one transport argus's relay cannot carry.)
    const unrelayed = PipelineSchema.parse({ sources: [{ id: 'a', uri: '/x.mp4', rtspTransport: 'http' }] });
    expect(() => withSource(unrelayed, 'rtsps://u:s3cret@cam-b/y', 'native', false)).toThrow(/bench: rtsps:\/\/\*\*\*@cam-b\/y with the first source's settings: tls\.verify: without argus's relay/);
  });

  it("measures a worker's YAML (no sources: its cameras are in the cameras topic) with a source's defaults; it read sources[0] of nothing", () => {
    const worker = PipelineSchema.parse({ sinks: { kafka: { brokers: ['127.0.0.1:9'] } }, cluster: { workerId: 'w1' } });
    expect(worker.sources).toEqual([]);
    const one = withSource(worker, '/x.mp4', 'fast', true);
    expect(one.sources).toEqual([SourceSchema.parse({ id: 'bench', uri: '/x.mp4', rate: 'fast', loop: true })]);
  });
});
