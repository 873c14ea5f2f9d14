import { describe, expect, it } from 'vitest';
import { callToolAnswer, checkFrameMessage, RateLimit, RequestQueue } from './bridge';
import { MAX_MESSAGE_BYTES, PROTOCOL } from './protocol';
import { frameCsp, frameDocument, inlineRuntime } from './srcdoc';

const frameWindow = {} as MessageEventSource;
const frame = { window: frameWindow, nonce: 'n-123' };
const message = (data: Record<string, unknown>, overrides: Partial<{ origin: string; source: MessageEventSource | null }> = {}) => ({
  origin: 'null',
  source: frameWindow,
  data: { protocol: PROTOCOL, nonce: 'n-123', ...data },
  ...overrides,
});

describe('frame message checks', () => {
  it('accepts a well-formed message from the frame', () => {
    expect(checkFrameMessage(message({ type: 'callTool', id: 1, action: 'save', payload: { a: 1 } }), frame)).toEqual({
      ok: true,
      message: { type: 'callTool', id: 1, action: 'save', payload: { a: 1 } },
    });
    expect(checkFrameMessage(message({ type: 'ready' }), frame).ok).toBe(true);
  });

  it('rejects another window as the source', () => {
    expect(checkFrameMessage(message({ type: 'ready' }, { source: {} as MessageEventSource }), frame)).toEqual({ ok: false, reason: 'wrong source' });
    expect(checkFrameMessage(message({ type: 'ready' }, { source: null }), frame)).toEqual({ ok: false, reason: 'wrong source' });
    expect(checkFrameMessage(message({ type: 'ready' }), { window: null, nonce: 'n-123' })).toEqual({ ok: false, reason: 'wrong source' });
  });

  it('rejects a real origin (a frame that gained one is not our sandbox)', () => {
    expect(checkFrameMessage(message({ type: 'ready' }, { origin: 'http://127.0.0.1:8080' }), frame)).toEqual({ ok: false, reason: 'wrong origin' });
  });

  it('rejects a wrong or missing nonce', () => {
    expect(checkFrameMessage(message({ type: 'ready', nonce: 'guess' }), frame)).toEqual({ ok: false, reason: 'wrong nonce' });
    expect(checkFrameMessage({ origin: 'null', source: frameWindow, data: { protocol: PROTOCOL, type: 'ready' } }, frame)).toEqual({ ok: false, reason: 'wrong nonce' });
  });

  it('rejects unknown types and non-protocol data', () => {
    expect(checkFrameMessage(message({ type: 'fetch', url: '/api/agents' }), frame)).toEqual({ ok: false, reason: 'unknown type' });
    expect(checkFrameMessage(message({ type: 'toString' }), frame)).toEqual({ ok: false, reason: 'unknown type' });
    expect(checkFrameMessage({ origin: 'null', source: frameWindow, data: 'ready' }, frame)).toEqual({ ok: false, reason: 'not a frame message' });
  });

  it('rejects oversized messages', () => {
    const big = 'x'.repeat(MAX_MESSAGE_BYTES);
    expect(checkFrameMessage(message({ type: 'callTool', id: 1, action: 'a', payload: { big } }), frame)).toEqual({ ok: false, reason: 'too large', id: 1 });
    expect(checkFrameMessage(message({ type: 'setState', id: 1, key: 'k', value: big }), frame).ok).toBe(true);
    expect(checkFrameMessage(message({ type: 'setState', id: 1, key: 'k', value: 'x'.repeat(2 * 1024 * 1024) }), frame)).toEqual({ ok: false, reason: 'too large', id: 1 });
  });

  it('rejects wrong field types', () => {
    expect(checkFrameMessage(message({ type: 'callTool', id: 'one', action: 'a' }), frame)).toEqual({ ok: false, reason: 'bad fields' });
    expect(checkFrameMessage(message({ type: 'callTool', id: 1, action: '' }), frame)).toEqual({ ok: false, reason: 'bad fields', id: 1 });
    expect(checkFrameMessage(message({ type: 'callTool', id: 1, action: 'a', payload: [1] }), frame)).toEqual({ ok: false, reason: 'bad fields', id: 1 });
    expect(checkFrameMessage(message({ type: 'sendMessage', id: 1, text: '   ' }), frame)).toEqual({ ok: false, reason: 'bad fields', id: 1 });
    expect(checkFrameMessage(message({ type: 'importModule', id: 1, name: '../admin' }), frame)).toEqual({ ok: false, reason: 'not a component name', id: 1 });
    expect(checkFrameMessage(message({ type: 'resize', height: 'tall' }), frame)).toEqual({ ok: false, reason: 'bad fields' });
    // a stop's reason is one of a closed set: the app never shows a component's words as its own
    expect(checkFrameMessage(message({ type: 'stopped', reason: 'Session expired: type your token' }), frame)).toEqual({ ok: false, reason: 'bad fields' });
    expect(checkFrameMessage(message({ type: 'stopped', reason: 'flood' }), frame)).toEqual({ ok: true, message: { type: 'stopped', reason: 'flood' } });
    // errors are shown inside the frame, never by the app: the type is gone from the protocol
    expect(checkFrameMessage(message({ type: 'error', message: 'x' }), frame)).toEqual({ ok: false, reason: 'unknown type' });
    // a request is answered with its refusal (the id above); without a usable id it is dropped
    expect(checkFrameMessage(message({ type: 'importModule', id: -1, name: '../admin' }), frame)).toEqual({ ok: false, reason: 'not a component name' });
  });
});

describe('callTool answer', () => {
  it('is {action, ...payload}, the action argument winning', () => {
    expect(callToolAnswer('save', { a: 1, action: 'other' })).toEqual({ action: 'save', a: 1 });
  });
});

describe('rate limit', () => {
  it('allows max per window', () => {
    const limit = new RateLimit(2, 1000);
    expect([limit.take(0), limit.take(1), limit.take(2), limit.take(1001)]).toEqual([true, true, false, true]);
  });
});

describe('frame document', () => {
  it('forbids network access and runs only its own scripts', () => {
    const csp = frameCsp('abc');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'none'");
    expect(csp).toContain("script-src 'nonce-abc' blob:");
    expect(csp).not.toMatch(/unsafe-eval|https?:|\*/);
  });

  it('cannot be broken out of by the runtime text', () => {
    const html = frameDocument({ runtime: 'let s = "</script><script>alert(1)</script>";', cspNonce: 'c', bridgeNonce: 'b' });
    // One inline script, the runtime, whose text the app's CSP pins by hash.
    expect(html.match(/<\/script>/g)).toHaveLength(1);
    expect(html).toContain(`<script nonce="c">${inlineRuntime('let s = "</script><script>alert(1)</script>";')}</script>`);
  });

  it('carries the bridge nonce in a meta element, never markup from it', () => {
    const html = frameDocument({ runtime: '', cspNonce: 'c', bridgeNonce: '0a1b"><script>x</script>' });
    expect(html).toContain('<meta name="wright-bridge" content="0a1bscriptxscript">');
  });
});

describe('the request queue of a frame', () => {
  it('runs a few at a time, refuses beyond its queue and its rate', async () => {
    const queue = new RequestQueue(2, 3, 100);
    let running = 0;
    let most = 0;
    const release: (() => void)[] = [];
    const work = () =>
      new Promise<number>((done) => {
        running += 1;
        most = Math.max(most, running);
        release.push(() => {
          running -= 1;
          done(1);
        });
      });
    const accepted = Array.from({ length: 5 }, () => queue.run(work));
    await expect(queue.run(work)).rejects.toThrow(/too many requests/);
    expect(running).toBe(2);
    while (release.length) {
      release.shift()!();
      await new Promise((done) => setTimeout(done, 0));
    }
    expect(await Promise.all(accepted)).toEqual([1, 1, 1, 1, 1]);
    expect(most).toBe(2);
    const limited = new RequestQueue(2, 10, 3);
    await Promise.all([limited.run(async () => 1), limited.run(async () => 1), limited.run(async () => 1)]);
    await expect(limited.run(async () => 1)).rejects.toThrow(/too many requests/);
  });
});
