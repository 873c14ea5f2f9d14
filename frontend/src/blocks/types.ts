// The blocks of render_blocks, as the tool's schema defines them (crates/wright-tools
// interaction.rs; seed 002 "render_blocks"). These are tool *arguments*, not API types:
// the API carries them as opaque JSON (`args`), so the canvas states what it reads.

export interface TableColumn {
  key: string;
  label: string;
}

export type FieldType = 'text' | 'number' | 'select' | 'checkbox' | 'textarea' | 'date';

export interface FormField {
  name: string;
  label: string;
  type: FieldType;
  options?: string[];
  required?: boolean;
  default?: unknown;
}

export type Block =
  | { type: 'markdown'; content: string }
  | { type: 'table'; columns: TableColumn[]; data: Record<string, unknown>[] }
  | { type: 'chart'; chartType: 'line' | 'bar' | 'pie' | 'area'; data: Record<string, unknown>; title?: string }
  | { type: 'form'; fields: FormField[]; submitLabel: string }
  | { type: 'code'; language: string; content: string }
  | { type: 'image'; url: string; alt?: string }
  | { type: 'alert'; variant: 'info' | 'warning' | 'danger' | 'success'; content: string }
  | { type: 'json'; data: unknown };

export interface RenderBlocksArgs {
  blocks: Block[];
  title?: string;
}

/** The answers a render_blocks call resolves with (the server and the tool's description spell a dismissal `dismissed`). */
export type BlocksAnswer = { action: 'submit'; data: Record<string, unknown> } | { action: 'dismissed' };
