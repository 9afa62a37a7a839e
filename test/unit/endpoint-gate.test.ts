import { endpointGate, MAX_DEFERRAL_MS, MIN_DEFERRAL_MS } from '../../src/outbound/endpoint-gate';

describe('endpointGate', () => {
  const at = { now: 1_000_000 };
  const gate = () => endpointGate({ perEndpoint: 2, now: () => at.now, jitter: () => 0 });

  it('lets in at most perEndpoint attempts to one endpoint, another endpoint apart', () => {
    const g = gate();
    const a = g.enter('sub-a');
    const b = g.enter('sub-a');
    expect([a, b].every(Boolean)).toBe(true);
    expect(g.enter('sub-a')).toBeNull();
    expect(g.enter('sub-b')).not.toBeNull();
    a!.leave({ durationMs: 10, ok: true });
    a!.leave({ durationMs: 10, ok: true });
    expect(g.running('sub-a')).toBe(1);
    expect(g.enter('sub-a')).not.toBeNull();
  });

  it('remembers whether the last attempt failed; one that sent nothing changes nothing', () => {
    const g = gate();
    g.enter('sub')!.leave({ durationMs: 10_000, ok: false });
    expect(g.failing('sub')).toBe(true);
    g.enter('sub')!.leave();
    expect(g.failing('sub')).toBe(true);
    g.enter('sub')!.leave({ durationMs: 50, ok: true });
    expect(g.failing('sub')).toBe(false);
  });

  it('gives each refusal the next place in the endpoint queue, at the pace its attempts take', () => {
    const g = gate();
    g.enter('sub');
    g.enter('sub')!.leave({ durationMs: 8_000, ok: true });
    g.enter('sub');
    // Two at a time, 8 s each: a place every 4 s, and a tenth more.
    expect([1, 2, 3].map(() => g.deferralMs('sub'))).toEqual([4_400, 8_800, 13_200]);
    at.now += 6_000;
    expect(g.deferralMs('sub')).toBe(11_600);
  });

  it('lets one attempt at a time probe an endpoint whose last attempt failed', () => {
    const g = gate();
    g.enter('sub')!.leave({ durationMs: 8_000, ok: false });
    const probe = g.enter('sub');
    expect(probe).not.toBeNull();
    expect(g.enter('sub')).toBeNull();
    // One at a time: a place every 8 s, and a tenth more.
    expect([1, 2].map(() => g.deferralMs('sub'))).toEqual([8_800, 17_600]);
    probe!.leave({ durationMs: 50, ok: true });
    expect(g.failing('sub')).toBe(false);
    expect(g.enter('sub')).not.toBeNull();
    expect(g.enter('sub')).not.toBeNull();
  });

  it('keeps the schedule after a failure unless the endpoint queue reaches past it', () => {
    const g = gate();
    g.enter('lone')!.leave({ durationMs: 8_000, ok: false });
    expect(g.retryMs('lone', 5_000)).toBe(5_000);
    expect(g.retryMs('never-seen', 30_000)).toBe(30_000);
    const held = g.enter('busy')!;
    held.leave({ durationMs: 8_000, ok: false });
    g.enter('busy');
    expect(g.deferralMs('busy')).toBe(8_800);
    // Behind the refused attempt: the next place, past the schedule's 5 s.
    expect(g.retryMs('busy', 5_000)).toBe(17_600);
    // A schedule's wait longer than the queue is kept as it is.
    expect(g.retryMs('busy', MAX_DEFERRAL_MS)).toBe(MAX_DEFERRAL_MS);
  });

  it('paces refusals one at a time until an attempt to the endpoint has finished', () => {
    const g = gate();
    g.enter('new');
    g.enter('new');
    expect([1, 2].map(() => g.deferralMs('new'))).toEqual([11_000, 22_000]);
  });

  it('never defers for less than a second or more than an hour', () => {
    const g = gate();
    g.enter('fast');
    g.enter('fast')!.leave({ durationMs: 10, ok: true });
    expect(g.deferralMs('fast')).toBe(MIN_DEFERRAL_MS);
    g.enter('dead')!.leave({ durationMs: 10_000, ok: false });
    const waits = Array.from({ length: 2_000 }, () => g.deferralMs('dead'));
    expect(Math.max(...waits)).toBe(MAX_DEFERRAL_MS);
  });
});
