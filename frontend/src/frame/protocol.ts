// The postMessage protocol between the canvas (parent) and a component frame.
// Shared by both sides; see src/frame/README.md for the full description.

export const PROTOCOL = 'wright-frame/1';

/** The largest message either side accepts, measured as JSON. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** Larger cap for state writes (the server's own per-value limit is 1 MiB). */
export const MAX_STATE_BYTES = 1024 * 1024;
export const MAX_TEXT_CHARS = 20_000;
export const MAX_ACTION_CHARS = 200;
export const MAX_KEY_CHARS = 256;
/** The server's rule for a stored component's name (wright-tools `components.rs`): a letter,
 * then letters, digits, `-` and `_`, at most 64 in all. */
export const COMPONENT_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** Frame → parent. Requests carry an `id`; the parent answers each with a `response`. */
export type FrameMessage =
  | { type: 'ready' }
  | { type: 'resize'; height: number }
  /** The person pressed a pointer in the frame (a trusted event the runtime saw): focus that
   * enters the frame now is theirs (focusGuard.ts). */
  | { type: 'gesture' }
  /** The frame stopped its worker: it flooded the frame, or drew past a limit. The frame shows
   * why in its own area; the parent offers a restart. */
  | { type: 'stopped'; reason: StopReason }
  | { type: 'callTool'; id: number; action: string; payload: Record<string, unknown> }
  | { type: 'sendMessage'; id: number; text: string }
  | { type: 'getState'; id: number; key: string }
  | { type: 'setState'; id: number; key: string; value: unknown }
  | { type: 'importModule'; id: number; name: string };

export type FrameMessageType = FrameMessage['type'];

export const FRAME_MESSAGE_TYPES: readonly FrameMessageType[] = ['ready', 'resize', 'gesture', 'stopped', 'callTool', 'sendMessage', 'getState', 'setState', 'importModule'];

/** Why a frame stopped its own worker: a closed set, so nothing the component wrote is shown
 * by the app. */
export const STOP_REASONS = ['flood', 'limit'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/** Parent → frame. */
export type ParentMessage =
  | { protocol: typeof PROTOCOL; nonce: string; type: 'init'; code: string; props: Record<string, unknown>; interactive: boolean; theme: 'light' | 'dark' }
  | { protocol: typeof PROTOCOL; nonce: string; type: 'theme'; theme: 'light' | 'dark' }
  | { protocol: typeof PROTOCOL; nonce: string; type: 'response'; id: number; ok: boolean; value?: unknown; error?: string };

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A parent message before the protocol tag and nonce are added. */
export type ParentMessageBody = DistributiveOmit<ParentMessage, 'protocol' | 'nonce'>;
