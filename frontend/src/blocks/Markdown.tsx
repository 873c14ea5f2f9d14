import { useEffect, useMemo, useRef } from 'react';
import { agentImageSource, learnRefusal, loadInTurn, refusedImageElement } from './image';
import { renderMarkdown } from './markdown';

/**
 * Markdown rendered to sanitized HTML (see markdown.ts). An image from an address loads through
 * Wright's image route, in turn with the page's other such images (loadInTurn); when Wright
 * refuses it (the error event says nothing more), the image is replaced by the refusal and its
 * reason, asked of the route once per address (image.ts).
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
  useEffect(() => {
    const images = container.current?.querySelectorAll<HTMLImageElement>('img[data-agent-image]:not([src])') ?? [];
    const giveUps = [...images].map((image) => loadInTurn(image, agentImageSource(new URL(image.getAttribute('data-agent-image')!))));
    // new HTML (streaming) or unmounted: these images are no longer shown
    return () => giveUps.forEach((giveUp) => giveUp());
  }, [html]);
  return <div ref={container} className={'markdown ' + (className ?? '')} dangerouslySetInnerHTML={{ __html: html }} />;
}
