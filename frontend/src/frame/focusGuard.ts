// Focus moves into a component frame only by the person's own action. A component can ask for
// `input.focus()` whenever it likes, and a focused frame receives every key the person types —
// into what they believe is the chat box. The first guard is in the frame: its runtime obeys a
// ref's focus() only right after the person's own pointer down or key inside the frame (trusted
// events, which the component's worker cannot make; runtime/main.ts). This is the second, in
// case focus enters by some other way: the parent sees its window lose focus to the iframe and
// keeps it there only when the person did it — Tab pressed in the app just before, or a pointer
// down inside the frame, which the frame's runtime reports (`gesture`). User activation is no
// sign: a key typed in the chat box keeps it alive for five seconds, and a component that took
// focus in such a pause once got the rest of what the person typed (issue 33, item 8). Any
// other entry is undone (focus goes back where it was, with the person's text as it was), and a
// frame that does it twice is stopped.

const TAB_GRACE_MS = 1000;
/** A pointer down in the frame reported this long before, or after, focus entered it. The report
 * comes as a message, after the focus change it caused. */
const GESTURE_BEFORE_MS = 1000;
const GESTURE_AFTER_MS = 150;
/** One entry on its own is forgiven (a component that autofocuses a field); the second is not. */
const STRIKES = 2;

export interface FocusGuard {
  /** The frame's runtime saw the person press a pointer in it. */
  gesture(): void;
  dispose(): void;
}

export function guardFocus(frame: HTMLIFrameElement, onStop: () => void): FocusGuard {
  let tabAt = -Infinity;
  let gestureAt = -Infinity;
  let strikes = 0;
  let deciding: ReturnType<typeof setTimeout> | null = null;
  let previous: HTMLElement | null = document.activeElement instanceof HTMLElement && document.activeElement !== frame ? document.activeElement : null;
  const onFocusIn = (event: FocusEvent) => {
    if (event.target instanceof HTMLElement && event.target.tagName !== 'IFRAME') previous = event.target;
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Tab') tabAt = performance.now();
  };
  const undo = () => {
    strikes += 1;
    if (previous?.isConnected) previous.focus();
    else frame.blur();
    if (strikes >= STRIKES) onStop();
  };
  const onBlur = () => {
    if (document.activeElement !== frame) return;
    const enteredAt = performance.now();
    if (enteredAt - tabAt < TAB_GRACE_MS) return;
    // Decided in a task of its own, once the frame's report of a pointer down could have come
    // (Chromium also ignores a focus() made inside the blur handler).
    if (deciding !== null) clearTimeout(deciding);
    deciding = setTimeout(() => {
      deciding = null;
      const byGesture = gestureAt >= enteredAt - GESTURE_BEFORE_MS && gestureAt <= enteredAt + GESTURE_AFTER_MS;
      if (byGesture) return;
      // also when the frame was stopped meanwhile: focus would otherwise be left on nothing
      if (document.activeElement !== frame && frame.isConnected) return;
      undo();
    }, GESTURE_AFTER_MS);
  };
  document.addEventListener('focusin', onFocusIn, true);
  document.addEventListener('keydown', onKeyDown, true);
  window.addEventListener('blur', onBlur);
  return {
    gesture: () => {
      gestureAt = performance.now();
    },
    dispose: () => {
      if (deciding !== null) clearTimeout(deciding);
      document.removeEventListener('focusin', onFocusIn, true);
      document.removeEventListener('keydown', onKeyDown, true);
      window.removeEventListener('blur', onBlur);
    },
  };
}
