// Focus moves into a component frame only by the person's own action. A component can call
// `input.focus()` whenever it likes, and a focused frame receives every key the person types
// — into what they believe is the chat box. The parent cannot see clicks inside the frame (they
// go to another document) and learns of a focus change only after keys may already have gone
// there, so refusing afterwards is too late. Instead a frame is `inert` (it can take no focus
// and no input) until the person's pointer is over it or they Tab onto it; it becomes inert
// again when the pointer leaves, or when they type in the app, unless focus is inside it.
// What remains: a component under a resting pointer can take focus before the next key; the
// person then sees the chat box lose its caret (ARCHITECTURE.md, frontend invariants).

export interface FocusGuard {
  /** The person moved the pointer over the frame, or moved keyboard focus onto its wrapper. */
  arm(): void;
  dispose(): void;
}

export function guardFocus(wrapper: HTMLElement, frame: HTMLIFrameElement): FocusGuard {
  const hasFocus = () => document.activeElement === frame;
  const disarm = () => {
    if (!hasFocus()) frame.inert = true;
  };
  const arm = () => {
    frame.inert = false;
  };
  // An inert frame is skipped by hit testing, so the pointer's events reach the wrapper.
  const onPointerMove = () => frame.inert && arm();
  // Keys typed in the app (not in a frame: those never reach this document) mean the person is
  // working outside the components.
  const onKeyDown = () => disarm();
  frame.inert = true;
  wrapper.addEventListener('pointermove', onPointerMove);
  wrapper.addEventListener('pointerleave', disarm);
  document.addEventListener('keydown', onKeyDown, true);
  return {
    arm,
    dispose() {
      wrapper.removeEventListener('pointermove', onPointerMove);
      wrapper.removeEventListener('pointerleave', disarm);
      document.removeEventListener('keydown', onKeyDown, true);
    },
  };
}
