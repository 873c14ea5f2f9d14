// Changes to stored components, told to every page of this browser: a canvas that shows a
// component looks it up again at once when one is enabled, disabled or rolled back, so a
// component the person disabled stops running in their other tabs too (it also rechecks on its
// own, for changes made elsewhere: Canvas.tsx).
export const COMPONENTS_CHANNEL = 'wright-components';

export function componentsChanged(): void {
  if (typeof BroadcastChannel !== 'function') return;
  const channel = new BroadcastChannel(COMPONENTS_CHANNEL);
  channel.postMessage('changed');
  channel.close();
}
