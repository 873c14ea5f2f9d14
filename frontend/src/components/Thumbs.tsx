// The person's thumbs on an answer (issue 31): up or down, then an optional comment. A rating
// belongs to the run that gave the answer (the server finds it from the answer's seq) and
// becomes that run's outcome, which the agent's learning rounds and its learned items'
// counters read.
import { useState } from 'react';
import { api, type Rating, type RunOutcome } from '../api/client';

/** The run an answer at `seq` came from: the latest run that started at or before it. */
export function runOf(outcomes: RunOutcome[], seq: number): RunOutcome | undefined {
  return outcomes.filter((run) => run.user_seq <= seq).at(-1);
}

export function Thumbs({ conversation, seq, rated, onRated }: { conversation: string; seq: number; rated: Rating | null; onRated: () => void }) {
  const [rating, setRating] = useState<Rating | null>(rated);
  const [comment, setComment] = useState('');
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const send = async (chosen: Rating, text: string | null) => {
    setError(null);
    try {
      await api.feedback(conversation, chosen, seq, text);
      setRating(chosen);
      onRated();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const shown = rating ?? rated;
  return (
    <div className="thumbs" role="group" aria-label="Rate this answer">
      <button type="button" className={`button ghost small ${shown === 'up' ? 'chosen' : ''}`} aria-pressed={shown === 'up'} aria-label="Good answer" onClick={() => { setAsking(true); void send('up', null); }}>
        👍
      </button>
      <button type="button" className={`button ghost small ${shown === 'down' ? 'chosen' : ''}`} aria-pressed={shown === 'down'} aria-label="Bad answer" onClick={() => { setAsking(true); void send('down', null); }}>
        👎
      </button>
      {asking && shown && (
        <form
          className="thumbs-comment"
          onSubmit={(event) => {
            event.preventDefault();
            if (comment.trim()) void send(shown, comment.trim()).then(() => { setAsking(false); setComment(''); });
          }}
        >
          <input aria-label="Comment on this answer" placeholder="What was right or wrong? (optional)" value={comment} onChange={(event) => setComment(event.target.value)} />
          <button type="submit" className="button small" disabled={!comment.trim()}>
            Send
          </button>
        </form>
      )}
      {error && <span className="field-error" role="alert">{error}</span>}
    </div>
  );
}
