import { useEffect, useMemo, useRef } from 'react';
import { learnRefusal, refusedImageElement } from './image';
import { renderMarkdown } from './markdown';

/**
 * Markdown rendered to sanitized HTML (see markdown.ts). An image from an address loads through
 * Wright's image route; when Wright refuses it (the error event says nothing more), the image is
 * replaced by the refusal and its reason, asked of the route once per address (image.ts).
 */
export function Markdown({ content, className }: { content: string; className?: string }) {
  const html = useMemo(() => renderMarkdown(content), [content]);
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    // `error` does not bubble: listen in the capture phase for every image inside.
    const onError = (event: Event) => {
      const image = event.target;
      if (!(image instanceof HTMLImageElement)) return;
      const href = image.getAttribute('data-agent-image');
      if (!href) return;
      void learnRefusal(href).then((reason) => {
        if (image.isConnected) image.replaceWith(refusedImageElement(image.ownerDocument, new URL(href), image.alt, reason));
      });
    };
    element.addEventListener('error', onError, true);
    return () => element.removeEventListener('error', onError, true);
  }, []);
  return <div ref={container} className={'markdown ' + (className ?? '')} dangerouslySetInnerHTML={{ __html: html }} />;
}
