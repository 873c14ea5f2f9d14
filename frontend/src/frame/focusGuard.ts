// Focus moves into a component frame only by the person's own action. A component can call
// `input.focus()` whenever it likes, and a focused frame receives every key the person types —
// into what they believe is the chat box. Nothing the parent can set stops that inside the frame
// (`inert` on the iframe does not, in Chromium, for a sandboxed frame's own focus()), and the
// parent sees neither clicks nor pointer moves over the frame. What it does see: its window
// losing focus to the iframe, its own keys, and user activation, which a click inside the frame
// passes up to the parent. So focus that enters a frame with the person's activation and no key
// or click in the app just before, or just after Tab, is the person's; any other entry is undone
// (focus goes back where it was), and a frame that does it twice is stopped. What may still
// reach a component: a key typed in the few milliseconds before the parent takes focus back, or
// after the person paused in the app for a second within the activation's 5 seconds.

const TAB_GRACE_MS = 1000;
/** Keys or clicks in the app this recently mean the person is working there, not in a component. */
const ACTING_MS = 1000;
/** One entry on its own is forgiven (a component that autofocuses a field); the second is not. */
const STRIKES = 2;

export function guardFocus(frame: HTMLIFrameElement, onStop: () => void): () => void {
  let tabAt = -Infinity;
  let inputAt = -Infinity;
  let strikes = 0;
  let previous: HTMLElement | null = document.activeElement instanceof HTMLElement && document.activeElement !== frame ? document.activeElement : null;
  const onFocusIn = (event: FocusEvent) => {
    if (event.target instanceof HTMLElement && event.target.tagName !== 'IFRAME') previous = event.target;
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Tab') tabAt = performance.now();
    else inputAt = performance.now();
  };
  // A click in the app (the parent sees none made inside a frame) gives activation too.
  const onPointerDown = () => (inputAt = performance.now());
  const onBlur = () => {
    if (document.activeElement !== frame) return;
    const now = performance.now();
    if (now - tabAt < TAB_GRACE_MS || (navigator.userActivation?.isActive && now - inputAt > ACTING_MS)) return;
    strikes += 1;
    // Taken back in a task of its own: Chromium ignores a focus() made inside the blur handler.
    // (also when the frame was stopped meanwhile: focus would otherwise be left on nothing)
    setTimeout(() => {
      if (document.activeElement !== frame && frame.isConnected) return;
      if (previous?.isConnected) previous.focus();
      else frame.blur();
    });
    if (strikes >= STRIKES) onStop();
  };
  document.addEventListener('focusin', onFocusIn, true);
  document.addEventListener('keydown', onKeyDown, true);
  document.addEventListener('pointerdown', onPointerDown, true);
  window.addEventListener('blur', onBlur);
  return () => {
    document.removeEventListener('focusin', onFocusIn, true);
    document.removeEventListener('keydown', onKeyDown, true);
    document.removeEventListener('pointerdown', onPointerDown, true);
    window.removeEventListener('blur', onBlur);
  };
}
