// Beside the chat's input: how full the model's context is (what the next request will send
// against the model's window) and what the conversation has used and cost so far. Read from
// `GET /api/conversations/{id}/usage`, fetched again whenever the conversation gains an event
// or changes status (and once more just after), so it follows a conversation as it goes.
import { useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { api } from '../api/client';

function tokens(count: number): string {
  if (count >= 1e6) return `${(count / 1e6).toFixed(1)}M`;
  if (count >= 1e3) return `${(count / 1e3).toFixed(1)}k`;
  return String(count);
}

export function dollars(cost: number): string {
  return cost === 0 ? '$0' : cost < 0.01 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

export function UsageMeter({ conversation, revision }: { conversation: string; revision: string }) {
  const usage = useQuery({
    queryKey: ['conversation-usage', conversation, revision],
    queryFn: () => api.conversationUsage(conversation),
    placeholderData: (previous) => previous,
  });
  // The ledger writes a request's row beside the stream's end, so the fetch the end caused can
  // come a moment early: ask once more after it.
  const { refetch } = usage;
  useEffect(() => {
    const again = setTimeout(() => void refetch(), 700);
    return () => clearTimeout(again);
  }, [revision, refetch]);
  const data = usage.data;
  if (!data) return null;
  const used = data.context_tokens ?? 0;
  const window = data.context_window ?? null;
  const share = window ? Math.min(1, used / window) : null;
  const spent = data.prompt_tokens + data.completion_tokens;
  return (
    <div className="usage-meter" aria-label="Usage of this conversation">
      <span
        className="context-meter"
        role="meter"
        aria-label="Context used"
        aria-valuemin={0}
        aria-valuemax={window ?? undefined}
        aria-valuenow={used}
        title={window ? `The next request sends about ${used} of the model's ${window} tokens` : 'The model’s context window is not known'}
      >
        <span className="context-bar">
          <span className="context-fill" style={{ width: `${Math.round((share ?? 0) * 100)}%` }} />
        </span>
        <span className="context-figure">
          {window ? `${tokens(used)} / ${tokens(window)}` : `${tokens(used)} tokens`}
        </span>
      </span>
      <span className="conversation-cost" aria-label="Conversation cost" title={`${data.requests} requests · ${data.cached_prompt_tokens} prompt tokens cached${data.estimated_requests ? ` · ${data.estimated_requests} estimated` : ''}`}>
        {tokens(spent)} tokens · {dollars(data.cost_usd)}
      </span>
    </div>
  );
}
