import { useState } from 'react';
import { highlight } from './highlight';

export function CodeBlock({ language, content }: { language?: string; content: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(content);
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    } catch {
      /* clipboard refused: nothing to do */
    }
  };
  return (
    <div className="code-block">
      <div className="code-head">
        <span className="code-lang">{language || 'text'}</span>
        <button type="button" className="button ghost small" onClick={copy}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <pre className="code">
        <code className="hljs" dangerouslySetInnerHTML={{ __html: highlight(content, language) }} />
      </pre>
    </div>
  );
}
