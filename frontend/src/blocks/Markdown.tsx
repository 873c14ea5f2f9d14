import { useMemo } from 'react';
import { renderMarkdown } from './markdown';

/** Markdown rendered to sanitized HTML (see markdown.ts). */
export function Markdown({ content, className }: { content: string; className?: string }) {
  const html = useMemo(() => renderMarkdown(content), [content]);
  return <div className={'markdown ' + (className ?? '')} dangerouslySetInnerHTML={{ __html: html }} />;
}
