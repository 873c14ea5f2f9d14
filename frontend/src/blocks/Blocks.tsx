// render_blocks: each block rendered by the app's own components, then the answer bar
// (a form's submit, or Dismiss when there is no form).
import { Chart } from './Chart';
import { CodeBlock } from './CodeBlock';
import { Form } from './Form';
import { AgentImage } from './AgentImage';
import { imageSource, remoteImage } from './image';
import { JsonView } from './JsonView';
import { Markdown } from './Markdown';
import { Table } from './Table';
import type { Block, BlocksAnswer } from './types';

const ALERT_ICONS = { info: 'ℹ', warning: '⚠', danger: '⛔', success: '✓' } as const;

export function BlockView({ block, onSubmit, disabled }: { block: Block; onSubmit?: (data: Record<string, unknown>) => void | Promise<void>; disabled?: boolean }) {
  switch (block.type) {
    case 'markdown':
      return <Markdown content={String(block.content ?? '')} />;
    case 'table':
      return <Table columns={Array.isArray(block.columns) ? block.columns : []} data={Array.isArray(block.data) ? block.data : []} />;
    case 'chart':
      return <Chart chartType={block.chartType} data={block.data} title={block.title} />;
    case 'form':
      return <Form fields={Array.isArray(block.fields) ? block.fields : []} submitLabel={block.submitLabel} onSubmit={onSubmit} disabled={disabled} />;
    case 'code':
      return <CodeBlock language={block.language} content={String(block.content ?? '')} />;
    case 'image': {
      const src = imageSource(String(block.url ?? ''));
      const remote = src ? null : remoteImage(String(block.url ?? ''));
      if (remote) return <AgentImage remote={remote} alt={block.alt ?? ''} />;
      return src ? (
        <figure className="block-image">
          <img src={src} alt={block.alt ?? ''} loading="lazy" />
          {block.alt && <figcaption>{block.alt}</figcaption>}
        </figure>
      ) : (
        <div className="block-empty">Image not shown: unsupported address.</div>
      );
    }
    case 'alert': {
      const variant = block.variant in ALERT_ICONS ? block.variant : 'info';
      return (
        <div className={`alert alert-${variant}`} role={variant === 'danger' || variant === 'warning' ? 'alert' : 'status'}>
          <span className="alert-icon" aria-hidden="true">
            {ALERT_ICONS[variant]}
          </span>
          <Markdown content={String(block.content ?? '')} className="alert-body" />
        </div>
      );
    }
    case 'json':
      return (
        <div className="json-view">
          <JsonView data={block.data} />
        </div>
      );
    default:
      return (
        <div className="json-view">
          <div className="block-empty">Unknown block type “{String((block as { type?: unknown }).type)}”:</div>
          <JsonView data={block} />
        </div>
      );
  }
}

/**
 * Blocks, answerable when `onAnswer` is given (a pending call) and read-only otherwise (a
 * call already answered, shown from history).
 */
export function Blocks({ blocks, onAnswer, disabled }: { blocks: Block[]; onAnswer?: (answer: BlocksAnswer) => void | Promise<void>; disabled?: boolean }) {
  const list = Array.isArray(blocks) ? blocks : [];
  const hasForm = list.some((block) => block?.type === 'form');
  return (
    <div className="blocks">
      {list.map((block, index) => (
        <div className="block" key={index}>
          <BlockView block={block} disabled={disabled} onSubmit={onAnswer ? (data) => onAnswer({ action: 'submit', data }) : undefined} />
        </div>
      ))}
      {!hasForm && onAnswer && (
        <div className="form-actions">
          <button type="button" className="button" disabled={disabled} onClick={() => onAnswer({ action: 'dismissed' })}>
            Dismiss
          </button>
        </div>
      )}
    </div>
  );
}
