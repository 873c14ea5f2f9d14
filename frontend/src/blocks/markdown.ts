// Markdown (GitHub-flavoured: tables, task lists, strikethrough, autolinks) to sanitized HTML.
// Everything the model writes passes DOMPurify: no scripts, no event handlers, no iframes.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { highlight } from './highlight';
import { remoteImage } from './image';

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
      // An image only from data the agent holds (image.ts); an address becomes a link to it.
      if (node.tagName === 'IMG') {
        const src = node.getAttribute('src') ?? '';
        if (!/^data:image\/(png|jpe?g|gif|webp|avif);base64,/i.test(src)) {
          node.removeAttribute('src');
          node.removeAttribute('srcset');
          const link = node.ownerDocument.createElement('a');
          const remote = remoteImage(src);
          link.textContent = `[image: ${node.getAttribute('alt') || remote?.host || 'not shown'}]`;
          if (remote) link.setAttribute('href', remote.href);
          node.replaceWith(link);
          if (!remote) return;
          node = link;
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
