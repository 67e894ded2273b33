import { describe, expect, it } from 'vitest';
import { openFirstWorking } from '../../src/inference/provider-fallback.js';
import { attemptList, createWithFallback, providerAttempts, providerConfig } from '../../src/inference/providers.js';

describe('providerAttempts', () => {
  it.each([
    [['cpu'], ['cpu']],
    [['cuda'], ['cuda', 'cpu']],
    [['tensorrt', 'cuda'], ['tensorrt', 'cuda', 'cpu']],
    [['cpu', 'cuda'], ['cuda', 'cpu']],
    [['cuda', 'cuda'], ['cuda', 'cpu']],
  ] as const)('%j → %j', (req, want) => expect(providerAttempts(req)).toEqual(want));
});

describe('providerConfig', () => {
  it('passes the device id, and TensorRT options, with CUDA and CPU behind for uncovered operators', () => {
    expect(providerConfig('cuda', { deviceId: 1 })).toEqual([{ name: 'cuda', deviceId: 1 }, 'cpu']);
    expect(providerConfig('tensorrt', { deviceId: 0, trtEngineCacheDir: '/cache', trtFp16: true })).toEqual([
      { name: 'tensorrt', deviceId: 0, trt_engine_cache_enable: '1', trt_engine_cache_path: '/cache', trt_fp16_enable: '1' },
      { name: 'cuda', deviceId: 0 },
      'cpu',
    ]);
  });
});

describe('createWithFallback', () => {
  const fake = (working: string[]) => async (_cfg: unknown, p: string) => {
    if (!working.includes(p)) throw new Error(`${p}: Failed to load shared library\nmore detail`);
    return `session-${p}`;
  };

  it('takes the first provider that works and reports the ones that failed', async () => {
    const c = await createWithFallback(['tensorrt', 'cuda'], fake(['cuda', 'cpu']), { deviceId: 0 });
    expect(c.session).toBe('session-cuda');
    expect(c.provider).toBe('cuda');
    expect(c.failed).toEqual([{ provider: 'tensorrt', reason: 'tensorrt: Failed to load shared library' }]);
  });

  it('falls back to CPU when no GPU provider loads', async () => {
    const c = await createWithFallback(['tensorrt', 'cuda'], fake(['cpu']), { deviceId: 0 });
    expect(c.provider).toBe('cpu');
    expect(c.failed.map((f) => f.provider)).toEqual(['tensorrt', 'cuda']);
  });

  it("throws CPU's own error when even CPU fails (the model is at fault)", async () => {
    await expect(createWithFallback(['cuda'], fake([]), { deviceId: 0 })).rejects.toThrow('cpu: Failed to load shared library');
  });
});

describe('openFirstWorking (the loop the worker threads run too)', () => {
  it('tries the attempts in order with their provider lists, and throws the last one\'s error when none opens (a replacement worker pinned to one provider)', async () => {
    const seen: unknown[] = [];
    const create = async (cfg: unknown, p: string) => {
      seen.push(cfg);
      if (p !== 'cpu') throw new Error(`${p} is gone\ndetail`);
      return 'session';
    };
    const ok = await openFirstWorking(attemptList(['cuda', 'cpu'], { deviceId: 2 }), create);
    expect(ok).toEqual({ session: 'session', provider: 'cpu', failed: [{ provider: 'cuda', reason: 'cuda is gone' }] });
    expect(seen).toEqual([[{ name: 'cuda', deviceId: 2 }, 'cpu'], ['cpu']]);
    await expect(openFirstWorking(attemptList(['cuda'], { deviceId: 0 }), create)).rejects.toThrow('cuda is gone');
    await expect(openFirstWorking([], create)).rejects.toThrow('no execution provider to try');
  });
});
