// An image block with an http(s) address: loaded through Wright's image route (image.ts), never
// from the address itself; when Wright refuses it, the refusal and its reason are shown instead.
import { useState } from 'react';
import { agentImageSource, learnRefusal, refusalOf } from './image';

export function AgentImage({ remote, alt }: { remote: URL; alt: string }) {
  const [refusal, setRefusal] = useState(() => refusalOf(remote.href));
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
      <img src={agentImageSource(remote)} alt={alt} loading="lazy" onError={() => void learnRefusal(remote.href).then(setRefusal)} />
      {alt && <figcaption>{alt}</figcaption>}
    </figure>
  );
}
