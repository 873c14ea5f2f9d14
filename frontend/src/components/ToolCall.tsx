// One tool call in the transcript: name, arguments and result, folded by default.
// Errors open by themselves; an image result (a screenshot) is shown as the image. A call
// that never finished (the run was cancelled, or the server stopped) has an error result
// whose output names why: `{error, category: "cancelled" | "interrupted" | "failed"}`. A result
// of outside content (a page, search results, an MCP tool) carries a small marker with its
// origin: what it says is someone else's words, not the agent's or the person's.
import { useState } from 'react';
import type { ToolResultEvent } from '../api/client';
import { imageInResult } from '../blocks/image';
import { JsonView } from '../blocks/JsonView';

export function parseOutput(output: unknown): unknown {
  if (typeof output !== 'string') return output;
  const trimmed = output.trim();
  if ((trimmed.startsWith('{') && trimmed.endsWith('}')) || (trimmed.startsWith('[') && trimmed.endsWith(']'))) {
    try {
      return JSON.parse(trimmed);
    } catch {
      return output;
    }
  }
  return output;
}

/** Why a call got a result without finishing, as the server writes it. */
export type Unfinished = 'cancelled' | 'interrupted' | 'failed';

export interface ToolResultInfo {
  success: boolean;
  output: unknown;
  /** Set when the call never finished: why, and the server's sentence about it. */
  unfinished: { reason: Unfinished; message: string } | null;
  /** Where its content came from when it is outside content (a host, or the tool). */
  outsideOrigin: string | null;
}

function unfinishedOf(output: unknown): ToolResultInfo['unfinished'] {
  if (typeof output !== 'object' || output === null || !('category' in output)) return null;
  const { category } = output;
  const error = 'error' in output ? output.error : undefined;
  if (category !== 'cancelled' && category !== 'interrupted' && category !== 'failed') return null;
  return { reason: category, message: typeof error === 'string' ? error : '' };
}

export function resultInfo(result: ToolResultEvent | null): ToolResultInfo | null {
  if (!result) return null;
  const output = parseOutput(result.output ?? result.content);
  return {
    success: result.success,
    output,
    unfinished: result.success ? null : unfinishedOf(output),
    outsideOrigin: result.outside_origin ?? null,
  };
}

function Value({ value }: { value: unknown }) {
  if (typeof value === 'string') return <pre className="tool-text">{value}</pre>;
  return (
    <div className="json-view">
      <JsonView data={value} />
    </div>
  );
}

function summary(args: unknown): string {
  if (typeof args !== 'object' || args === null) return '';
  const first = Object.entries(args as Record<string, unknown>).find(([, value]) => typeof value === 'string' || typeof value === 'number');
  if (!first) return '';
  const text = String(first[1]).replace(/\s+/g, ' ');
  return text.length > 60 ? text.slice(0, 59) + '…' : text;
}

const UNFINISHED_LABELS: Record<Unfinished, string> = { cancelled: 'cancelled', interrupted: 'interrupted', failed: 'not finished' };

export function ToolCall({ name, args, result, waiting, running }: { name: string; args: unknown; result: ToolResultEvent | null; waiting?: boolean; running?: boolean }) {
  const info = resultInfo(result);
  // A call cut short by a cancel or a restart is expected, not a fault to look into: closed.
  const [open, setOpen] = useState(info ? !info.success && !info.unfinished : false);
  const image = info ? imageInResult(info.output) : null;
  const state = info ? (info.success ? 'ok' : 'error') : waiting ? 'waiting' : running ? 'running' : 'stopped';
  const stateLabel = info?.unfinished ? UNFINISHED_LABELS[info.unfinished.reason] : { ok: 'done', error: 'failed', waiting: 'waiting for you', running: 'running…', stopped: 'no result' }[state];
  return (
    <div className={`tool-call tool-${state}${info?.unfinished ? ` tool-${info.unfinished.reason}` : ''}`}>
      <button type="button" className="tool-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="tool-caret" aria-hidden="true">
          {open ? '▾' : '▸'}
        </span>
        <span className="tool-name">{name}</span>
        <span className="tool-summary">{summary(args)}</span>
        {info?.outsideOrigin && (
          <span className="tool-origin" title={`Content from outside: ${info.outsideOrigin}. Instructions in it are not yours.`}>
            from {info.outsideOrigin}
          </span>
        )}
        <span className={`tool-state state-${state}`}>{stateLabel}</span>
      </button>
      {image && !open && <img className="tool-image" src={image.src} alt={`${name} result`} />}
      {open && (
        <div className="tool-body">
          <div className="tool-section">Arguments</div>
          <Value value={args ?? {}} />
          {info && (
            <>
              <div className="tool-section">{info.success ? 'Result' : info.unfinished ? `Not finished (${info.unfinished.reason})` : 'Error'}</div>
              {image ? (
                <img className="tool-image" src={image.src} alt={`${name} result`} />
              ) : info.unfinished?.message ? (
                <p className="tool-unfinished">{info.unfinished.message}</p>
              ) : (
                <Value value={info.output} />
              )}
            </>
          )}
        </div>
      )}
    </div>
  );
}
