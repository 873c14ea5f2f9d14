// The scripted model itself: it refuses, as OpenAI does, a history whose tool calls are not
// answered right after their assistant message, or a tool message that answers nothing, with
// OpenAI's error body — and counts each refusal, which the browser tests assert is none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeModel, validateHistory, type FakeModel, type WireMessage } from './harness';

const call = (id: string) => ({ id, function: { name: 'x', arguments: '{}' } });
const user: WireMessage = { role: 'user', content: 'hi' };
const calls = (...ids: string[]): WireMessage => ({ role: 'assistant', content: null, tool_calls: ids.map(call) });
const result = (id: string): WireMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' });

const UNANSWERED =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";
const ORPHAN = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

describe('the scripted model validates histories as OpenAI does', () => {
  it('accepts calls answered right after their message, in any order', () => {
    expect(validateHistory([user, calls('a', 'b'), result('b'), result('a'), { role: 'assistant', content: 'done' }, user])).toBeNull();
  });

  it('refuses calls left unanswered, naming them', () => {
    expect(validateHistory([user, calls('a', 'b', 'c'), result('b'), user])).toEqual({
      error: { message: UNANSWERED + 'a, c', type: 'invalid_request_error', param: 'messages', code: null },
    });
    // answered too late: a user message came in between
    expect(validateHistory([user, calls('a'), user, result('a')])?.error.message).toBe(UNANSWERED + 'a');
  });

  it('refuses a tool message that answers no preceding call', () => {
    expect(validateHistory([user, result('a')])?.error).toMatchObject({ message: ORPHAN, type: 'invalid_request_error', code: null });
    expect(validateHistory([user, calls('a'), result('a'), result('a')])?.error.message).toBe(ORPHAN);
    expect(validateHistory([user, calls('a'), result('z')])?.error.message).toBe(ORPHAN);
  });

  describe('over HTTP', () => {
    let fake: FakeModel;
    beforeAll(async () => {
      fake = await startFakeModel(() => ({ text: 'fine' }));
    });
    afterAll(() => fake.close());

    it('answers 400 with the error body and counts the refusal', async () => {
      const post = (messages: WireMessage[]) =>
        fetch(`${fake.baseUrl}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages }) });
      const refused = await post([user, calls('a')]);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({ error: { message: UNANSWERED + 'a', type: 'invalid_request_error', param: 'messages', code: null } });
      const fine = await post([user, calls('a'), result('a')]);
      expect(fine.status).toBe(200);
      await fine.text();
      expect(fake.refused).toHaveLength(1);
      expect(fake.refused[0]).toMatchObject({ status: 400, request: { messages: [user, calls('a')] } });
    });
  });
});
