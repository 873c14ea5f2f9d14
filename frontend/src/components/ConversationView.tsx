// One conversation: chat on one side, canvas on the other (tabs on narrow screens).
import { useCallback, useEffect, useState } from 'react';
import { navigate, routePath } from '../router';
import type { Status } from '../api/client';
import { useConversation } from '../state/useConversation';
import { Canvas } from './Canvas';
import { Chat } from './Chat';
import { ConversationActions } from './ConversationActions';
import { canvasItems } from './Canvas';

export function ConversationView({ agent, id, status, onChanged }: { agent: string; id: string; status: Status | null; onChanged: () => void }) {
  const { state, send, cancel, answer, reload, loadError, connection } = useConversation(id);
  const [focus, setFocus] = useState<string | null>(null);
  const [tab, setTab] = useState<'chat' | 'canvas'>('chat');
  // Forms and components wait in the canvas; questions and approvals in the chat.
  const waitingInCanvas = state.pending.some((call) => call.shown?.type === 'form' || call.shown?.type === 'component');
  const canvasCount = canvasItems(state).length;
  // The answer of the last command typed here (`/codestats`, …), shown under the transcript.
  const [commandReply, setCommandReply] = useState<string | null>(null);
  // `/newsession [name]` opens the new session's conversation.
  const sendOrStart = useCallback(
    async (text: string) => {
      const reply = await send(text);
      setCommandReply(reply && 'reply' in reply ? reply.reply : null);
      if (reply && 'conversation_id' in reply) {
        onChanged();
        navigate(routePath({ page: 'agent', agent, conversation: reply.conversation_id }));
      }
    },
    [send, onChanged, agent],
  );

  // The sidebar shows status and order; refresh it when this conversation's status changes.
  useEffect(() => {
    onChanged();
  }, [state.status, onChanged]);
  useEffect(() => {
    if (waitingInCanvas) setTab('canvas');
  }, [waitingInCanvas]);

  if (loadError) {
    return (
      <div className="empty-state">
        <h2>This conversation could not be opened</h2>
        <p className="muted">{loadError}</p>
      </div>
    );
  }
  return (
    <div className={`workspace tab-${tab}`}>
      <header className="workspace-head">
        <h1 className="conversation-title">{state.conversation?.title ?? ' '}</h1>
        <span className={`status-chip status-${state.status}`}>{state.status === 'waiting' ? 'waiting for you' : state.status}</span>
        {connection === 'retrying' && <span className="status-chip status-error">reconnecting…</span>}
        {state.conversation && (
          <ConversationActions
            agent={agent}
            id={id}
            title={state.conversation.title}
            onChanged={() => {
              reload();
              onChanged();
            }}
          />
        )}
        <div className="tabs" role="tablist">
          <button role="tab" aria-selected={tab === 'chat'} className="tab" onClick={() => setTab('chat')}>
            Chat
          </button>
          <button role="tab" aria-selected={tab === 'canvas'} className="tab" onClick={() => setTab('canvas')}>
            Canvas{canvasCount ? ` (${canvasCount})` : ''}
            {waitingInCanvas && <span className="dot" aria-label="waiting" />}
          </button>
        </div>
      </header>
      <div className="panes">
        <Chat
          conversationId={id}
          state={state}
          status={status}
          onSend={sendOrStart}
          commandReply={commandReply}
          onCancel={cancel}
          onAnswer={answer}
          onShowCanvas={(toolCallId) => {
            setFocus(toolCallId);
            setTab('canvas');
          }}
        />
        <Canvas agent={agent} state={state} focus={focus} onAnswer={answer} />
      </div>
    </div>
  );
}
