// Rename, archive, delete and export the open conversation. Deleting asks first: it removes the
// conversation's events for good (archiving keeps everything and only hides it from the list).
import { useState } from 'react';
import { api } from '../api/client';
import { ConfirmButtons, ErrorAlert } from '../admin/parts';
import { navigate, routePath } from '../router';

export function ConversationActions({ agent, id, title, onChanged }: { agent: string; id: string; title: string; onChanged: () => void }) {
  const [mode, setMode] = useState<'idle' | 'rename' | 'delete'>('idle');
  const [draft, setDraft] = useState(title);
  const [error, setError] = useState<string | null>(null);
  const act = async (action: () => Promise<unknown>, after?: () => void) => {
    try {
      await action();
      setError(null);
      setMode('idle');
      onChanged();
      after?.();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const leave = () => navigate(routePath({ page: 'agent', agent, conversation: null }));
  return (
    <div className="conversation-actions">
      <ErrorAlert error={error} />
      {mode === 'rename' ? (
        <form
          className="card-actions"
          onSubmit={(event) => {
            event.preventDefault();
            void act(() => api.updateConversation(id, { title: draft }));
          }}
        >
          <input aria-label="Conversation title" value={draft} onChange={(event) => setDraft(event.target.value)} autoFocus />
          <button type="submit" className="button primary small" disabled={!draft.trim()}>
            Rename
          </button>
          <button type="button" className="button ghost small" onClick={() => setMode('idle')}>
            Cancel
          </button>
        </form>
      ) : mode === 'delete' ? (
        <div role="alertdialog" aria-label="Delete this conversation?">
          <p className="small">Delete this conversation and everything said in it? This cannot be undone; archiving keeps it.</p>
          <ConfirmButtons label="Delete" onConfirm={() => void act(() => api.deleteConversation(id), leave)} onCancel={() => setMode('idle')} />
        </div>
      ) : (
        <div className="card-actions">
          <button
            type="button"
            className="button ghost small"
            onClick={() => {
              setDraft(title);
              setMode('rename');
            }}
          >
            Rename
          </button>
          <button type="button" className="button ghost small" onClick={() => void act(() => api.updateConversation(id, { archived: true }), leave)}>
            Archive
          </button>
          <button type="button" className="button ghost small" onClick={() => setMode('delete')}>
            Delete
          </button>
          {/* Plain links: the browser saves what the server names in Content-Disposition. */}
          <a className="button ghost small" href={api.exportUrl(id, 'markdown')} download>
            Export Markdown
          </a>
          <a className="button ghost small" href={api.exportUrl(id, 'json')} download>
            Export JSON
          </a>
        </div>
      )}
    </div>
  );
}
