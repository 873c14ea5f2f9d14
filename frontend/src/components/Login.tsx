import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api/client';
import { Logo } from './Logo';

export function Login({ onLoggedIn }: { onLoggedIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!token.trim()) return;
    setBusy(true);
    setError(null);
    try {
      await api.login(token.trim());
      onLoggedIn();
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 401 ? 'That token is not right.' : (failure as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="login">
      <form className="login-card" onSubmit={submit}>
        <div className="login-brand">
          <Logo size={36} />
          <h1>Wright</h1>
        </div>
        <p className="muted">Enter the access token that <code>wright serve</code> printed on its first start (it is also in <code>data/token</code>).</p>
        <label htmlFor="token">Access token</label>
        <input id="token" name="token" type="password" autoComplete="current-password" autoFocus value={token} onChange={(event) => setToken(event.target.value)} aria-invalid={error ? true : undefined} />
        {error && (
          <div className="field-error" role="alert">
            {error}
          </div>
        )}
        <button type="submit" className="button primary wide" disabled={busy || !token.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
