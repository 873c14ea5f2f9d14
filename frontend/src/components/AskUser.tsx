// ask_user in the chat: option buttons, or a free-text answer. Answers {answer: string}.
import { useState, type FormEvent } from 'react';
import { Markdown } from '../blocks/Markdown';

export function AskUser({ question, options, onAnswer }: { question: string; options?: string[]; onAnswer: (answer: { answer: string }) => Promise<void> }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const answer = async (value: string) => {
    if (!value.trim() || busy) return;
    setBusy(true);
    setError(null);
    try {
      await onAnswer({ answer: value });
    } catch (failure) {
      setError((failure as Error).message);
      setBusy(false);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void answer(text);
  };
  return (
    <div className="ask-user" role="group" aria-label="The agent asks">
      <div className="ask-label">The agent asks</div>
      <Markdown content={question} />
      {options && options.length > 0 ? (
        <div className="ask-options">
          {options.map((option, index) => (
            <button key={option} type="button" className="button" disabled={busy} autoFocus={index === 0} onClick={() => void answer(option)}>
              {option}
            </button>
          ))}
        </div>
      ) : (
        <form className="ask-form" onSubmit={submit}>
          <input aria-label="Your answer" autoFocus value={text} disabled={busy} onChange={(event) => setText(event.target.value)} placeholder="Type your answer…" />
          <button type="submit" className="button primary" disabled={busy || !text.trim()}>
            Answer
          </button>
        </form>
      )}
      {error && (
        <div className="field-error" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
