// A call the agent's policy says to ask about (a tool with effects outside the agent's own
// data, or one the person set to `ask`): shown with its arguments, run only if the person
// approves. Answers {decision: "approve" | "deny" | "always", arguments?}: "approve" may carry
// the person's edit of the arguments; "always" also allows the tool from now on. When the host
// asks although the tool's policy would let it run (the run read content from outside), the
// card says why, naming where that content came from.
import { useState } from 'react';

export type ApprovalAnswer = { decision: 'approve' | 'deny' | 'always'; arguments?: Record<string, unknown> };

export function Approval({
  tool,
  args,
  reason,
  onAnswer,
}: {
  tool: string;
  args: unknown;
  reason?: string | null;
  onAnswer: (answer: ApprovalAnswer) => Promise<void>;
}) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(() => JSON.stringify(args ?? {}, null, 2));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const decide = async (decision: ApprovalAnswer['decision']) => {
    if (busy) return;
    let answer: ApprovalAnswer = { decision };
    if (decision !== 'deny' && editing) {
      let edited: unknown;
      try {
        edited = JSON.parse(text);
      } catch (failure) {
        setError(`The arguments are not valid JSON: ${(failure as Error).message}`);
        return;
      }
      if (typeof edited !== 'object' || edited === null || Array.isArray(edited)) {
        setError('The arguments must be a JSON object.');
        return;
      }
      answer = { decision, arguments: edited as Record<string, unknown> };
    }
    setBusy(true);
    setError(null);
    try {
      await onAnswer(answer);
    } catch (failure) {
      setError((failure as Error).message);
      setBusy(false);
    }
  };

  return (
    <div className="ask-user approval" role="group" aria-label={`Approve ${tool}?`}>
      <div className="ask-label">The agent wants to run {tool}</div>
      {reason && (
        <div className="approval-reason" role="note" aria-label="Why this asks">
          Asked because {reason}: what it read may have told the agent to do this.
        </div>
      )}
      {editing ? (
        <textarea
          className="approval-arguments"
          aria-label="Arguments"
          spellCheck={false}
          rows={Math.min(16, Math.max(4, text.split('\n').length))}
          value={text}
          disabled={busy}
          onChange={(event) => setText(event.target.value)}
        />
      ) : (
        <pre className="approval-arguments">{JSON.stringify(args ?? {}, null, 2)}</pre>
      )}
      <div className="ask-options">
        <button type="button" className="button primary" disabled={busy} onClick={() => void decide('approve')}>
          {editing ? 'Approve as edited' : 'Approve'}
        </button>
        <button type="button" className="button" disabled={busy} onClick={() => void decide('deny')}>
          Deny
        </button>
        {!editing && (
          <button type="button" className="button" disabled={busy} onClick={() => setEditing(true)}>
            Edit arguments
          </button>
        )}
        <button type="button" className="button" disabled={busy} onClick={() => void decide('always')} title={`Run ${tool} from now on without asking`}>
          Always allow {tool}
        </button>
      </div>
      {error && (
        <div className="field-error" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
