// Markdown (GitHub-flavoured: tables, task lists, strikethrough, autolinks) to sanitized HTML.
// Everything the model writes passes DOMPurify: no scripts, no event handlers, no iframes.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { highlight } from './highlight';
import { refusalOf, refusedImageElement, remoteImage } from './image';

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }) {
      const language = (lang ?? '').split(/\s/)[0];
      const label = language ? `<span class="code-lang">${language.replace(/[^\w+#.-]/g, '')}</span>` : '';
      return `<pre class="code">${label}<code class="hljs">${highlight(text, language)}</code></pre>`;
    },
  },
});

let hooked = false;
function purifier() {
  if (!hooked) {
    // Links open outside the app and carry no referrer.
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      // An image only from data the agent holds, or from an address through Wright's image
      // route (image.ts); `data-agent-image` marks the latter for Markdown.tsx, which loads it
      // and shows a refusal, and only the hook sets it.
      if (node.tagName === 'IMG') {
        node.removeAttribute('data-agent-image');
        node.removeAttribute('srcset');
        const src = node.getAttribute('src') ?? '';
        if (!/^data:image\/(png|jpe?g|gif|webp|avif);base64,/i.test(src)) {
          const remote = remoteImage(src);
          const refusal = remote ? refusalOf(remote.href) : undefined;
          if (remote && refusal === undefined) {
            // no src yet: Markdown.tsx gives each its route address in turn (loadInTurn)
            node.removeAttribute('src');
            node.setAttribute('data-agent-image', remote.href);
            return;
          }
          node.removeAttribute('src');
          if (remote && refusal !== undefined) {
            node.replaceWith(refusedImageElement(node.ownerDocument, remote, node.getAttribute('alt') ?? '', refusal));
            return;
          }
          const note = node.ownerDocument.createElement('span');
          note.className = 'image-refused';
          note.textContent = `[image not shown: ${node.getAttribute('alt') || 'unsupported address'}]`;
          node.replaceWith(note);
          return;
        }
      }
      if (node.tagName === 'A' && node.getAttribute('href')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
    hooked = true;
  }
  return DOMPurify;
}

export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false });
  return purifier().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'iframe'],
    FORBID_ATTR: ['style'],
  });
}
