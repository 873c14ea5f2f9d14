// How much a component may send, on both sides of its frame. A component's worker can post
// messages as fast as a loop runs, and the frame and the app may share one main thread: a flood
// of errors, bridge requests or render trees, handled one by one, once froze the chat box for
// seconds per keystroke (issue 33, item 9). So every side counts before it reads: the frame
// counts the worker's messages and the time it spends on them and stops a worker that keeps
// flooding; the frame passes requests on at a bounded rate; the parent drops what a frame sends
// beyond its own budget and stops a frame that keeps going. And no answer leaves at once: a
// request answered in the same task it arrived in tells the component, to a fraction of a
// millisecond, when the app's thread was busy — the person's keystrokes (item 10) — so answers
// wait for a coarse clock.

/** A token bucket: `perSecond` on average, `burst` at once. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }
  take(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface FloodLimits {
  /** Messages, or milliseconds spent on them, in one second that stop the sender at once. */
  burstMessages: number;
  burstBusyMs: number;
  /** Per second, kept up for `sustainedSeconds` in a row, they stop it too. */
  sustainedMessages: number;
  sustainedBusyMs: number;
  sustainedSeconds: number;
}

/** A component that renders a large table at once or saves its state often stays well under
 * these; a loop that posts without pause passes them within a few seconds. */
export const WORKER_FLOOD_LIMITS: FloodLimits = { burstMessages: 20_000, burstBusyMs: 600, sustainedMessages: 2_000, sustainedBusyMs: 150, sustainedSeconds: 3 };

/**
 * Counts messages and the time spent handling them, per second of wall time. `begin` before
 * reading a message (false: the sender flooded, stop it and read nothing more), `end` after.
 */
export class FloodGuard {
  private windowStart: number;
  private messages = 0;
  private busy = 0;
  private started = 0;
  private overWindows = 0;
  private flooded = false;
  constructor(
    private readonly limits: FloodLimits = WORKER_FLOOD_LIMITS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.windowStart = now();
  }
  begin(): boolean {
    if (this.flooded) return false;
    const now = this.now();
    if (now - this.windowStart >= 1000) {
      const over = this.messages > this.limits.sustainedMessages || this.busy > this.limits.sustainedBusyMs;
      // a quiet second in between starts the count again; a gap of several seconds too
      this.overWindows = over && now - this.windowStart < 2000 ? this.overWindows + 1 : 0;
      this.windowStart = now;
      this.messages = 0;
      this.busy = 0;
    }
    this.messages += 1;
    this.started = now;
    if (this.messages > this.limits.burstMessages || this.busy > this.limits.burstBusyMs || this.overWindows >= this.limits.sustainedSeconds) {
      this.flooded = true;
      return false;
    }
    return true;
  }
  end(): void {
    this.busy += this.now() - this.started;
  }
}

/**
 * Answers held back to a coarse clock: each leaves at the first tick (a multiple of `tickMs`)
 * at least `minDelayMs` after it was given, with the others due then, in one go. How long an
 * answer took then says nothing finer than the tick about what else the thread was doing.
 */
export class AnswerGate<T> {
  private queue: { item: T; due: number }[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  constructor(
    private readonly deliver: (items: T[]) => void,
    private readonly tickMs = 50,
    private readonly minDelayMs = 20,
    private readonly now: () => number = () => performance.now(),
  ) {}
  push(item: T): void {
    if (this.closed) return;
    this.queue.push({ item, due: this.now() + this.minDelayMs });
    this.schedule();
  }
  /** Nothing more is delivered. */
  close(): void {
    this.closed = true;
    this.queue = [];
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
  private schedule() {
    if (this.timer !== null || !this.queue.length) return;
    const now = this.now();
    const tick = Math.ceil(this.queue[0].due / this.tickMs) * this.tickMs;
    this.timer = setTimeout(() => this.flush(), Math.max(0, tick - now));
  }
  private flush() {
    this.timer = null;
    const now = this.now();
    const due = this.queue.filter((entry) => entry.due <= now);
    this.queue = this.queue.filter((entry) => entry.due > now);
    if (due.length) this.deliver(due.map((entry) => entry.item));
    this.schedule();
  }
}
