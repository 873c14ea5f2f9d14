import { fireEvent, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PushDevice } from '../api/client';
import { deviceLabel, keyBytes } from '../push';
import { renderPage } from '../test/render';
import { Devices } from './Devices';

function device(fields: Partial<PushDevice>): PushDevice {
  return { id: 1, label: 'Chrome on Android', service: 'fcm.googleapis.com', created_at: '2026-11-27T10:00:00Z', last_sent_at: null, last_error: null, ...fields };
}

/** The devices route over a list the test holds: GET lists it, DELETE removes from it. */
function fakeApi(devices: PushDevice[] | 'off') {
  const asked: string[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const path = new URL(String(input), 'http://wright.test').pathname;
      const method = init?.method ?? 'GET';
      asked.push(`${method} ${path}`);
      if (devices === 'off') return new Response(JSON.stringify({ error: { code: 'push_off', message: 'off' } }), { status: 404 });
      const removed = path.match(/^\/api\/push\/devices\/(\d+)$/);
      if (method === 'DELETE' && removed) {
        devices = devices.filter((entry) => entry.id !== Number(removed[1]));
        return new Response(JSON.stringify({ ok: true }), { status: 200 });
      }
      if (path === '/api/push/devices') return new Response(JSON.stringify(devices), { status: 200 });
      return new Response(JSON.stringify({ error: { code: 'not_found', message: path } }), { status: 404 });
    }),
  );
  return asked;
}

afterEach(() => vi.unstubAllGlobals());

describe('Settings → Devices', () => {
  it('lists the subscribed browsers with their last failure, and removes one', async () => {
    const asked = fakeApi([device({}), device({ id: 2, label: 'Firefox on Linux', service: 'updates.push.services.mozilla.com', last_error: 'the push service answered 500' })]);
    renderPage(<Devices />);
    expect(await screen.findByText('Chrome on Android')).toBeTruthy();
    expect(screen.getByText('Last push failed: the push service answered 500')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Remove Firefox on Linux' }));
    await waitFor(() => expect(screen.queryByText('Firefox on Linux')).toBeNull());
    expect(asked).toContain('DELETE /api/push/devices/2');
    expect(screen.getByText('Chrome on Android')).toBeTruthy();
  });

  it('says so when push is off on the server, and offers no button', async () => {
    fakeApi('off');
    renderPage(<Devices />);
    expect(await screen.findByText(/Web Push is off on this server/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Notify this device' })).toBeNull();
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it('names a device by its browser and system, and reads the server key as bytes', () => {
    expect(deviceLabel('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36')).toBe('Chrome on Android');
    expect(deviceLabel('Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1')).toBe('Safari on iOS');
    expect(deviceLabel('Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0')).toBe('Firefox on Linux');
    expect(Array.from(keyBytes('AP8-_w'))).toEqual([0, 255, 62, 255]);
  });
});
