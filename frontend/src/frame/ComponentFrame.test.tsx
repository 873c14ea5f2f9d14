// The parent's side of a frame's limits (issue 33, items 9 and 10), with the frame's messages
// dispatched as the browser would deliver them: from the iframe's window, origin "null", with
// its nonce. (In Chromium, with the real runtime and worker: e2e/attacks.e2e.ts.)
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { ComponentFrame } from './ComponentFrame';
import { PROTOCOL } from './protocol';
import { ThemeProvider } from '../theme';

async function mount() {
  render(
    <ThemeProvider>
      <ComponentFrame code="export default () => null" props={{}} title="Under test" context={{ agent: 'default', conversationId: 'c1', component: 'test', onAnswer: async () => {} }} />
    </ThemeProvider>,
  );
  const iframe = (await screen.findByTitle('Under test')) as HTMLIFrameElement;
  // jsdom gives the frame a new window once its srcdoc loads (a browser keeps one WindowProxy):
  // let it load, and the parent's effect take that window, first.
  await new Promise((done) => setTimeout(done, 200));
  const nonce = /name="wright-bridge" content="([0-9a-f]+)"/.exec(iframe.srcdoc)![1];
  const frameWindow = iframe.contentWindow!;
  const posted = vi.spyOn(frameWindow, 'postMessage').mockImplementation(() => {});
  const send = (data: Record<string, unknown>) =>
    window.dispatchEvent(new MessageEvent('message', { data: { protocol: PROTOCOL, nonce, ...data }, origin: 'null', source: frameWindow }));
  return { send, posted };
}

describe('a component frame, from the parent', () => {
  it('answers a malformed request, but never in the task it arrived in, nor within 20 ms', async () => {
    const { send, posted } = await mount();
    const sentAt = performance.now();
    send({ type: 'importModule', id: 7, name: '../admin' });
    expect(posted).not.toHaveBeenCalled();
    await waitFor(() => expect(posted).toHaveBeenCalledWith(expect.objectContaining({ type: 'response', id: 7, ok: false, error: 'refused: not a component name' }), '*'));
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(20);
  });

  it('drops what a frame sends over its budget, stops one that keeps going, and restarts it on request', async () => {
    const { send } = await mount();
    for (let index = 0; index < 800; index++) send({ type: 'resize', height: 100 + index });
    await screen.findByText('This component was stopped: it sent more than the canvas accepts.');
    expect(screen.queryByTitle('Under test')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Restart the component' }));
    await screen.findByTitle('Under test');
    expect(screen.queryByText(/was stopped/)).toBeNull();
  });

  it('lets a frame that keeps to its budget go on', async () => {
    const { send } = await mount();
    for (let index = 0; index < 150; index++) send({ type: 'resize', height: 100 + index });
    await new Promise((done) => setTimeout(done, 50));
    expect(screen.getByTitle('Under test')).toBeTruthy();
    expect(screen.queryByText(/was stopped/)).toBeNull();
  });
});
