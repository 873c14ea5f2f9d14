// Schedules and notifications in the canvas, against a real `wright serve` (harness.ts) in
// Debian's Chromium: the person asks for a reminder, the model makes a schedule with its
// `schedule` tool; at the schedule's time (the debug binary's clock is a file this test moves,
// so nothing waits for real time) the run happens by itself, calls `notify`, and its answer
// arrives in the open canvas as a notification; Open shows the scheduled run's conversation;
// the admin page lists the schedule.
//
// Needs the built app (`npm run build`), the built binary (`cargo build`) and Chromium; it is
// skipped without them.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launch } from './browser';
import { hasWright, startFakeModel, startWright, toolResults, type FakeModel, type ModelRequest, type ModelReply, type Wright } from './harness';

const built = existsSync(join(import.meta.dirname, '..', 'dist', 'index.html'));

/** The canvas conversation makes the schedule; the scheduled run notifies, then answers. */
function script(request: ModelRequest): ModelReply {
  const first = request.messages.find((message) => message.role === 'user')?.content ?? '';
  const results = toolResults(request);
  if (first.includes('Scheduled task')) {
    if (results.length === 0) return { toolCalls: [{ name: 'notify', arguments: { title: 'Stretch', text: 'Time to **stretch**!' } }] };
    return { text: 'Reminder delivered: stretch now.' };
  }
  if (results.length === 0) {
    return {
      toolCalls: [
        { name: 'schedule', arguments: { action: 'create', name: 'stretch', prompt: 'Remind me to stretch', at: '2026-11-24T10:00', time_zone: 'Europe/Oslo' } },
      ],
    };
  }
  return { text: 'I will remind you at 10:00 Oslo time.' };
}

describe.skipIf(!built || !hasChromium || !hasWright)('schedules and notifications in the canvas', () => {
  let fake: FakeModel;
  let wright: Wright;
  let browser: Browser;
  let page: Page;
  let clockDir: string;
  let clock: string;
  const setTime = (iso: string) => writeFileSync(clock, String(Date.parse(iso)));

  beforeAll(async () => {
    clockDir = mkdtempSync(join(tmpdir(), 'wright-clock-'));
    clock = join(clockDir, 'now');
    // 09:00 in Oslo.
    setTime('2026-11-24T08:00:00Z');
    fake = await startFakeModel(script);
    wright = await startWright(fake, { config: '[schedules]\ntick_ms = 100\n', env: { WRIGHT_TEST_CLOCK_FILE: clock } });
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(wright.url);
    await page.locator('#token').fill(wright.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: '+ New conversation' }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await wright?.stop();
    await fake?.close();
    rmSync(clockDir, { recursive: true, force: true });
  });

  it('shows a scheduled run’s result and the notification it sent', async () => {
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page.getByRole('textbox', { name: 'Message' }).fill('Remind me to stretch at 10');
    await page.keyboard.press('Enter');
    await page.getByText('I will remind you at 10:00 Oslo time.').waitFor();

    // 10:00:05 in Oslo: the schedule comes due; its run notifies, then answers.
    setTime('2026-11-24T09:00:05Z');
    const notifications = page.getByRole('region', { name: 'Notifications' });
    // Exact: a name matches case-insensitively as a substring otherwise, and the result's
    // notification (⏰ stretch) may already be there too.
    const sent = notifications.getByRole('article', { name: 'Stretch', exact: true });
    await sent.waitFor({ timeout: 20_000 });
    expect(await sent.innerHTML()).toContain('<strong>stretch</strong>');
    const result = notifications.getByRole('article', { name: '⏰ stretch', exact: true });
    await result.waitFor({ timeout: 20_000 });
    await expect(result.textContent()).resolves.toContain('Reminder delivered: stretch now.');
    expect(fake.refused).toEqual([]);

    // Open shows the scheduled run's conversation, with the prompt and the answer.
    await result.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('heading', { name: '⏰ stretch' }).waitFor();
    await page.getByText('Reminder delivered: stretch now.').first().waitFor();
    await page.getByText('Remind me to stretch', { exact: false }).first().waitFor();
    await result.waitFor({ state: 'detached' });

    // The admin page lists it: a one-off that ran.
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    const row = page.getByRole('row', { name: 'Schedule stretch' });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('done');
    await expect(row.textContent()).resolves.toContain('Europe/Oslo');
  });
});
