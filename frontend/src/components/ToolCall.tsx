// One tool call in the transcript: name, arguments and result, folded by default.
// Errors open by themselves; an image result (a screenshot) is shown as the image.
import { useState } from 'react';
import type { StoredEvent } from '../api/client';
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

export interface ToolResultInfo {
  success: boolean;
  output: unknown;
}

export function resultInfo(result: StoredEvent | null): ToolResultInfo | null {
  if (!result) return null;
  const data = (result.data_json ?? {}) as { success?: boolean; output?: unknown };
  return { success: data.success !== false, output: parseOutput(data.output ?? result.content) };
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

export function ToolCall({ name, args, result, waiting, running }: { name: string; args: unknown; result: StoredEvent | null; waiting?: boolean; running?: boolean }) {
  const info = resultInfo(result);
  const [open, setOpen] = useState(info ? !info.success : false);
  const image = info ? imageInResult(info.output) : null;
  const state = info ? (info.success ? 'ok' : 'error') : waiting ? 'waiting' : running ? 'running' : 'stopped';
  const stateLabel = { ok: 'done', error: 'failed', waiting: 'waiting for you', running: 'running…', stopped: 'no result' }[state];
  return (
    <div className={`tool-call tool-${state}`}>
      <button type="button" className="tool-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="tool-caret" aria-hidden="true">
          {open ? '▾' : '▸'}
        </span>
        <span className="tool-name">{name}</span>
        <span className="tool-summary">{summary(args)}</span>
        <span className={`tool-state state-${state}`}>{stateLabel}</span>
      </button>
      {image && !open && <img className="tool-image" src={image.src} alt={`${name} result`} />}
      {open && (
        <div className="tool-body">
          <div className="tool-section">Arguments</div>
          <Value value={args ?? {}} />
          {info && (
            <>
              <div className="tool-section">{info.success ? 'Result' : 'Error'}</div>
              {image ? <img className="tool-image" src={image.src} alt={`${name} result`} /> : <Value value={info.output} />}
            </>
          )}
        </div>
      )}
    </div>
  );
}
