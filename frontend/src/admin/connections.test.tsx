import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConnectionForm } from './Connections';

/** A fetch that records what the form sends and answers it as the server would. */
function fakeApi() {
  const sent: { method: string; path: string; body: unknown }[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const path = new URL(String(input), 'http://wright.test').pathname;
      sent.push({ method: init?.method ?? 'GET', path, body: init?.body ? JSON.parse(String(init.body)) : null });
      return new Response(JSON.stringify({ id: 'c1' }), { status: 201 });
    }),
  );
  return sent;
}

afterEach(() => vi.unstubAllGlobals());

describe('the connection form checks what the server checks before sending', () => {
  it('says what is wrong with each field and sends nothing', async () => {
    const sent = fakeApi();
    render(<ConnectionForm onSaved={() => {}} />);
    fireEvent.change(screen.getByLabelText('Connection name'), { target: { value: '   ' } });
    fireEvent.change(screen.getByLabelText('Base URL'), { target: { value: 'localhost:8080' } });
    fireEvent.change(screen.getByLabelText('API key'), { target: { value: 'sk-one\ttwo' } });
    fireEvent.click(screen.getByRole('button', { name: 'Add connection' }));
    expect(await screen.findByText('A connection needs a name.')).toBeTruthy();
    expect(screen.getByText('The base URL must start with http:// or https://.')).toBeTruthy();
    expect(screen.getByText('The key must be one line.')).toBeTruthy();
    expect(screen.getByLabelText('Base URL').getAttribute('aria-invalid')).toBe('true');
    fireEvent.change(screen.getByLabelText('Connection name'), { target: { value: 'x'.repeat(101) } });
    fireEvent.click(screen.getByRole('button', { name: 'Add connection' }));
    expect(await screen.findByText('At most 100 characters.')).toBeTruthy();
    expect(sent).toEqual([]);
  });

  it('sends the trimmed values as the server’s ConnectionInput', async () => {
    const sent = fakeApi();
    const saved = vi.fn();
    render(<ConnectionForm onSaved={saved} />);
    fireEvent.change(screen.getByLabelText('Connection name'), { target: { value: '  Local llama  ' } });
    fireEvent.change(screen.getByLabelText('Provider'), { target: { value: 'ollama' } });
    fireEvent.change(screen.getByLabelText('Base URL'), { target: { value: ' http://127.0.0.1:11434 ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Add connection' }));
    await waitFor(() => expect(saved).toHaveBeenCalled());
    expect(sent).toEqual([{ method: 'POST', path: '/api/settings/connections', body: { name: 'Local llama', kind: 'ollama', base_url: 'http://127.0.0.1:11434', api_key: null, clear_api_key: false } }]);
    // The form is empty again for the next connection.
    expect((screen.getByLabelText('Connection name') as HTMLInputElement).value).toBe('');
  });
});

describe('the model choice follows the server’s rules', () => {
  it('needs a connection and a model; a context window is a positive whole number or empty', async () => {
    const { choiceSchema, choiceInput } = await import('./connectionSchema');
    const base = { connectionId: 'c1', model: ' qwen ', toolCalls: 'native' as const, contextWindow: '' };
    expect(choiceInput(choiceSchema.parse(base))).toEqual({ connection_id: 'c1', model: 'qwen', tool_calls: 'native', context_window: null });
    expect(choiceInput(choiceSchema.parse({ ...base, contextWindow: '32768' })).context_window).toBe(32768);
    for (const contextWindow of ['0', '-5', '1.5', 'lots', '4294967296']) expect(choiceSchema.safeParse({ ...base, contextWindow }).success).toBe(false);
    expect(choiceSchema.safeParse({ ...base, model: '  ' }).success).toBe(false);
    expect(choiceSchema.safeParse({ ...base, connectionId: '' }).success).toBe(false);
  });
});
