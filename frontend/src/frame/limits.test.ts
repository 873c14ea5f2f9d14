// The budgets of limits.ts on a clock the test moves.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AnswerGate, FloodGuard, TokenBucket, WORKER_FLOOD_LIMITS } from './limits';

let now = 0;
const clock = () => now;

describe('TokenBucket', () => {
  it('gives a burst, then the rate', () => {
    now = 0;
    const bucket = new TokenBucket(10, 3, clock);
    expect([bucket.take(), bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, true, false]);
    now = 100;
    expect([bucket.take(), bucket.take()]).toEqual([true, false]);
  });
});

describe('FloodGuard', () => {
  const handle = (guard: FloodGuard, cost: number) => {
    if (!guard.begin()) return false;
    now += cost;
    guard.end();
    return true;
  };

  it('lets a large first render and steady updates through', () => {
    now = 0;
    const guard = new FloodGuard(WORKER_FLOOD_LIMITS, clock);
    expect(handle(guard, 400)).toBe(true); // one big tree
    for (let second = 0; second < 30; second++) {
      for (let frame = 0; frame < 60; frame++) {
        expect(handle(guard, 0.5)).toBe(true);
        now += 1000 / 60 - 0.5;
      }
    }
  });

  it('stops a burst of messages at once, and a sender that keeps going within seconds', () => {
    now = 0;
    const burst = new FloodGuard(WORKER_FLOOD_LIMITS, clock);
    let handled = 0;
    while (handle(burst, 0.001)) handled += 1;
    expect(handled).toBe(WORKER_FLOOD_LIMITS.burstMessages);
    expect(burst.begin()).toBe(false);

    now = 0;
    const steady = new FloodGuard(WORKER_FLOOD_LIMITS, clock);
    let seconds = 0;
    // 3,000 messages a second, 0.1 ms each: under the burst limits, over the sustained ones
    for (; seconds < 10; seconds++) {
      let stopped = false;
      for (let index = 0; index < 3000 && !stopped; index++) {
        stopped = !handle(steady, 0.1);
        now += 1000 / 3000 - 0.1;
      }
      if (stopped) break;
    }
    expect(seconds).toBe(WORKER_FLOOD_LIMITS.sustainedSeconds);
  });
});

describe('AnswerGate', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('answers on its clock, never sooner than the delay, and all that is due together', () => {
    vi.setSystemTime(0);
    const delivered: { at: number; items: number[] }[] = [];
    const gate = new AnswerGate<number>((items) => delivered.push({ at: Date.now(), items }), 50, 20, () => Date.now());
    vi.advanceTimersByTime(29);
    gate.push(1); // due at 49: the tick at 50
    vi.advanceTimersByTime(20);
    gate.push(2); // given at 49, due at 69: not with the first
    vi.advanceTimersByTime(200);
    expect(delivered).toEqual([
      { at: 50, items: [1] },
      { at: 100, items: [2] },
    ]);
    gate.close();
    gate.push(3);
    vi.advanceTimersByTime(200);
    expect(delivered.length).toBe(2);
  });
});
