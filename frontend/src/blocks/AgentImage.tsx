// An image block with an http(s) address: loaded through Wright's image route (image.ts), in turn
// with the page's other agent images, never from the address itself; when Wright refuses it, the
// refusal and its reason are shown instead.
import { useEffect, useRef, useState } from 'react';
import { agentImageSource, learnRefusal, loadInTurn, refusalOf } from './image';

export function AgentImage({ remote, alt }: { remote: URL; alt: string }) {
  const [refusal, setRefusal] = useState(() => refusalOf(remote.href));
  const image = useRef<HTMLImageElement>(null);
  const source = agentImageSource(remote);
  // the source is given in turn with the page's other agent images (image.ts)
  useEffect(() => {
    if (image.current && !image.current.getAttribute('src')) return loadInTurn(image.current, source);
  }, [source, refusal]);
  if (refusal !== undefined) {
    return (
      <div className="block-empty image-refused" role="note">
        Image refused ({refusal}):{' '}
        <a href={remote.href} target="_blank" rel="noopener noreferrer">
          {alt || remote.host}
        </a>
      </div>
    );
  }
  return (
    <figure className="block-image">
      <img ref={image} alt={alt} onError={() => void learnRefusal(remote.href).then(setRefusal)} />
      {alt && <figcaption>{alt}</figcaption>}
    </figure>
  );
}
