// What crosses between a component's Worker (where the agent's code runs, with no DOM) and
// its frame (which draws): the element tree as mutations, the person's events, the bridge's
// requests. Shared by both sides; the frame trusts none of it — the worker runs hostile code,
// which can post any message it likes — and builds DOM only from what the allowlists below
// admit: tags, attributes, attribute values, style properties and their values. Nothing
// admitted here can name a URL, so nothing the frame draws makes the browser resolve or
// connect to anything (see README.md).

// ---- the tree --------------------------------------------------------------------------

/** Props as they travel: plain values only. `$on` lists the React event props the element
 * has handlers for (the handlers themselves stay in the worker). */
export type WireValue = string | number | boolean | string[] | Record<string, string | number>;
export type WireProps = Record<string, WireValue>;

/** A subtree mounted for the first time. Text nodes have `text`; elements have `tag`. */
export type WireNode = { id: number; text: string } | { id: number; tag: string; props: WireProps; children: WireNode[] };

/** One change to the tree. Parent 0 is the root; `before` null appends. */
export type Op =
  | { op: 'insert'; parent: number; before: number | null; node: WireNode }
  | { op: 'move'; parent: number; id: number; before: number | null }
  | { op: 'remove'; parent: number; id: number }
  | { op: 'props'; id: number; set: WireProps; unset: string[] }
  | { op: 'text'; id: number; text: string }
  | { op: 'hide'; id: number }
  | { op: 'unhide'; id: number }
  | { op: 'clear' };

/** What a ref's handle may ask the frame to do with its element. */
export const ELEMENT_METHODS = ['focus', 'blur', 'scrollIntoView', 'select'] as const;
export type ElementMethod = (typeof ELEMENT_METHODS)[number];

/** The bridge requests the worker may make; the frame passes them on to the parent. */
export const BRIDGE_REQUESTS = ['callTool', 'sendMessage', 'getState', 'setState', 'importModule'] as const;
export type BridgeRequest = (typeof BRIDGE_REQUESTS)[number];

/** Worker → frame. */
export type WorkerMessage =
  | { t: 'ops'; ops: Op[] }
  | { t: 'ack'; seq: number }
  | { t: 'call'; id: number; method: ElementMethod }
  | { t: 'error'; message: string }
  | { t: 'request'; type: BridgeRequest; id: number; fields: Record<string, unknown> };

/** What an event carries to the worker about the element it happened on. */
export interface WireTarget {
  id: number | null;
  value?: string | string[];
  checked?: boolean;
  name?: string;
  type?: string;
}

/** Frame → worker. `path` lists the ids from the target up to the root that listen for the
 * event; the worker dispatches to their handlers in that order (bubbling). */
export type FrameToWorker =
  | { t: 'init'; code: string; props: Record<string, unknown>; interactive: boolean }
  | { t: 'event'; seq: number; type: DomEvent; path: number[]; target: WireTarget; data: Record<string, unknown> }
  | { t: 'response'; id: number; ok: boolean; value?: unknown; error?: string }
  /** Requests the frame refused itself (over its rate), answered together on its clock. */
  | { t: 'responses'; responses: { id: number; ok: false; error: string }[] };

// ---- limits the frame enforces -----------------------------------------------------------

export interface SurfaceLimits {
  /** Live elements and text nodes in the frame. */
  maxNodes: number;
  /** Nesting depth of one mounted subtree. */
  maxDepth: number;
  /** Characters of one text node. */
  maxTextChars: number;
  /** Characters of one attribute or style value. */
  maxValueChars: number;
}

export const DEFAULT_LIMITS: SurfaceLimits = { maxNodes: 20_000, maxDepth: 256, maxTextChars: 100_000, maxValueChars: 20_000 };

// ---- events ------------------------------------------------------------------------------

/** The DOM events the frame listens for (on the root, so they bubble as React's do), and the
 * React props each may call. Which of onChange/onInput a given input gets is decided in the
 * worker (`handlerNames`), as React does: text fields change on `input`, checkboxes, radios
 * and selects on `change`. mouseenter/mouseleave do not bubble; the frame listens on the
 * element itself. */
export const DOM_EVENTS = {
  click: ['onClick'],
  dblclick: ['onDoubleClick'],
  input: ['onInput', 'onChange'],
  change: ['onChange'],
  submit: ['onSubmit'],
  keydown: ['onKeyDown'],
  keyup: ['onKeyUp'],
  focusin: ['onFocus'],
  focusout: ['onBlur'],
  mouseenter: ['onMouseEnter'],
  mouseleave: ['onMouseLeave'],
} as const satisfies Record<string, readonly string[]>;
export type DomEvent = keyof typeof DOM_EVENTS;
export const EVENT_PROPS: ReadonlySet<string> = new Set(Object.values(DOM_EVENTS).flat());

/** The React props a DOM event calls on an element of this kind. */
export function handlerNames(type: DomEvent, tag: string, inputType: unknown): readonly string[] {
  const changesOnChange = tag === 'select' || (tag === 'input' && (inputType === 'checkbox' || inputType === 'radio'));
  if (type === 'input') return changesOnChange ? ['onInput'] : ['onInput', 'onChange'];
  if (type === 'change') return changesOnChange ? ['onChange'] : [];
  return DOM_EVENTS[type];
}

// ---- tags --------------------------------------------------------------------------------

/** HTML elements a component may draw. None of them loads anything, navigates or embeds:
 * no a, img, iframe, frame, object, embed, video, audio, source, track, picture, link, meta,
 * base, script, style, template, slot, portal, canvas (drawing needs the DOM). */
export const HTML_TAGS: ReadonlySet<string> = new Set([
  'div', 'span', 'p', 'section', 'article', 'aside', 'header', 'footer', 'main', 'nav', 'figure', 'figcaption',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'strong', 'em', 'b', 'i', 'u', 's', 'small', 'mark', 'sub', 'sup', 'code', 'pre', 'kbd', 'samp', 'var',
  'blockquote', 'q', 'cite', 'abbr', 'time', 'del', 'ins', 'br', 'hr', 'wbr',
  'ul', 'ol', 'li', 'dl', 'dt', 'dd',
  'table', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td', 'colgroup', 'col',
  'form', 'fieldset', 'legend', 'label', 'button', 'input', 'textarea', 'select', 'option', 'optgroup', 'output',
  'progress', 'meter', 'details', 'summary',
]);

/** SVG basic shapes and text; no use, image, a, foreignObject, pattern, filter, mask,
 * gradients or markers (each can reference another document or an image). */
export const SVG_TAGS: ReadonlySet<string> = new Set(['svg', 'g', 'path', 'circle', 'ellipse', 'line', 'polyline', 'polygon', 'rect', 'text', 'tspan', 'title', 'desc']);

export const isAllowedTag = (tag: string) => HTML_TAGS.has(tag) || SVG_TAGS.has(tag);

// ---- attributes --------------------------------------------------------------------------

/** How an attribute's value is checked and set. */
type Kind =
  | 'text' // any string (a number becomes one)
  | 'bool' // present or absent
  | 'number' // a finite number, or a string that is one
  | 'length' // a number, or a number with a CSS length unit or %
  | 'prop' // set as the element's property (value, checked, …): see Surface
  | { oneOf: readonly string[] }
  | 'color' // an SVG paint: a CSS <color> or none (never url())
  | 'path' // SVG path data: commands and numbers
  | 'points' // numbers
  | 'transform'; // SVG transform functions of numbers

const GLOBAL_ATTRIBUTES: Record<string, Kind> = {
  className: 'text',
  id: 'text',
  title: 'text',
  role: 'text',
  lang: 'text',
  dir: { oneOf: ['ltr', 'rtl', 'auto'] },
  hidden: 'bool',
  tabIndex: 'number',
  spellCheck: { oneOf: ['true', 'false'] },
  translate: { oneOf: ['yes', 'no'] },
};

const INPUT_TYPES = ['text', 'number', 'email', 'password', 'search', 'tel', 'url', 'date', 'time', 'datetime-local', 'month', 'week', 'color', 'range', 'checkbox', 'radio', 'hidden', 'submit', 'reset', 'button'];

const FIELD: Record<string, Kind> = { name: 'text', disabled: 'bool', required: 'bool', readOnly: 'bool', autoComplete: { oneOf: ['on', 'off'] } };

const TAG_ATTRIBUTES: Record<string, Record<string, Kind>> = {
  input: {
    ...FIELD,
    type: { oneOf: INPUT_TYPES },
    value: 'prop',
    defaultValue: 'prop',
    checked: 'prop',
    defaultChecked: 'prop',
    placeholder: 'text',
    min: 'text',
    max: 'text',
    step: 'text',
    minLength: 'number',
    maxLength: 'number',
    size: 'number',
    pattern: 'text',
    multiple: 'bool',
    inputMode: { oneOf: ['none', 'text', 'decimal', 'numeric', 'tel', 'search', 'email', 'url'] },
  },
  textarea: { ...FIELD, value: 'prop', defaultValue: 'prop', placeholder: 'text', rows: 'number', cols: 'number', minLength: 'number', maxLength: 'number', wrap: { oneOf: ['soft', 'hard', 'off'] } },
  select: { ...FIELD, value: 'prop', defaultValue: 'prop', multiple: 'bool', size: 'number' },
  option: { value: 'text', disabled: 'bool', selected: 'prop', label: 'text' },
  optgroup: { label: 'text', disabled: 'bool' },
  button: { name: 'text', disabled: 'bool', value: 'text', type: { oneOf: ['button', 'submit', 'reset'] } },
  fieldset: { disabled: 'bool', name: 'text' },
  label: { htmlFor: 'text' },
  output: { htmlFor: 'text', name: 'text' },
  form: { noValidate: 'bool' },
  ol: { start: 'number', reversed: 'bool', type: { oneOf: ['1', 'a', 'A', 'i', 'I'] } },
  li: { value: 'number' },
  th: { colSpan: 'number', rowSpan: 'number', scope: { oneOf: ['row', 'col', 'rowgroup', 'colgroup'] }, abbr: 'text' },
  td: { colSpan: 'number', rowSpan: 'number' },
  col: { span: 'number' },
  colgroup: { span: 'number' },
  progress: { value: 'number', max: 'number' },
  meter: { value: 'number', min: 'number', max: 'number', low: 'number', high: 'number', optimum: 'number' },
  details: { open: 'bool' },
  time: { dateTime: 'text' },
  del: { dateTime: 'text' },
  ins: { dateTime: 'text' },
};

const SVG_PRESENTATION: Record<string, Kind> = {
  fill: 'color',
  stroke: 'color',
  strokeWidth: 'length',
  strokeLinecap: { oneOf: ['butt', 'round', 'square'] },
  strokeLinejoin: { oneOf: ['miter', 'round', 'bevel'] },
  strokeDasharray: 'points',
  opacity: 'number',
  fillOpacity: 'number',
  strokeOpacity: 'number',
  fillRule: { oneOf: ['nonzero', 'evenodd'] },
  transform: 'transform',
  fontSize: 'length',
  fontWeight: 'text',
  fontFamily: 'text',
  textAnchor: { oneOf: ['start', 'middle', 'end'] },
  dominantBaseline: { oneOf: ['auto', 'middle', 'central', 'hanging', 'alphabetic', 'ideographic', 'text-top', 'text-bottom'] },
};

const SVG_ATTRIBUTES: Record<string, Record<string, Kind>> = {
  svg: { width: 'length', height: 'length', viewBox: 'points', preserveAspectRatio: 'text' },
  path: { d: 'path', pathLength: 'number' },
  circle: { cx: 'length', cy: 'length', r: 'length' },
  ellipse: { cx: 'length', cy: 'length', rx: 'length', ry: 'length' },
  line: { x1: 'length', y1: 'length', x2: 'length', y2: 'length' },
  polyline: { points: 'points' },
  polygon: { points: 'points' },
  rect: { x: 'length', y: 'length', width: 'length', height: 'length', rx: 'length', ry: 'length' },
  text: { x: 'points', y: 'points', dx: 'points', dy: 'points' },
  tspan: { x: 'points', y: 'points', dx: 'points', dy: 'points' },
  g: {},
  title: {},
  desc: {},
};

/** React prop name → DOM attribute name, where they differ. */
const ATTRIBUTE_NAMES: Record<string, string> = {
  className: 'class',
  htmlFor: 'for',
  tabIndex: 'tabindex',
  readOnly: 'readonly',
  maxLength: 'maxlength',
  minLength: 'minlength',
  colSpan: 'colspan',
  rowSpan: 'rowspan',
  spellCheck: 'spellcheck',
  autoComplete: 'autocomplete',
  inputMode: 'inputmode',
  noValidate: 'novalidate',
  dateTime: 'datetime',
  viewBox: 'viewBox',
  preserveAspectRatio: 'preserveAspectRatio',
  pathLength: 'pathLength',
};

const LENGTH = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?(px|em|rem|ex|ch|vw|vh|vmin|vmax|cm|mm|in|pt|pc|%)?$/i;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const NUMBER_LIST = /^[\d\s,.eE+-]*$/;
const PATH_DATA = /^[MmZzLlHhVvCcSsQqTtAa\d\s,.eE+-]*$/;
const TRANSFORM = /^((matrix|translate|scale|rotate|skewX|skewY)\([\d\s,.eE+-]*\)[\s,]*)*$/;

/**
 * A CSS value whose text is substituted after the filter has looked at it: `var()` (whose
 * fallback may hold `url()` and which `CSS.supports('color', …)` accepts whatever it holds),
 * `env()` and `attr()`; and a backslash, since CSS escapes spell the same names in other
 * letters (`v\61r(`). Refused in every style value and SVG paint or font attribute
 * (issue 33, item 11): what is checked is what is drawn.
 */
export const SUBSTITUTED = /\\|(?:var|env|attr)\s*\(/i;

/** The DOM name of an allowed attribute (`aria-*` and `data-*` as they are). */
function attributeName(prop: string): string {
  if (ATTRIBUTE_NAMES[prop]) return ATTRIBUTE_NAMES[prop];
  if (/^(aria|data)-/.test(prop)) return prop;
  // SVG presentation attributes are kebab-case (strokeWidth → stroke-width)
  return prop.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

function kindOf(tag: string, prop: string): Kind | undefined {
  if (/^aria-[a-z]+$/.test(prop)) return 'text';
  if (/^data-[a-z0-9-]+$/.test(prop)) return 'text';
  if (SVG_TAGS.has(tag)) {
    if (prop === 'className' || prop === 'id' || prop === 'role' || prop === 'tabIndex') return GLOBAL_ATTRIBUTES[prop];
    return SVG_ATTRIBUTES[tag]?.[prop] ?? SVG_PRESENTATION[prop];
  }
  if (!HTML_TAGS.has(tag)) return undefined;
  return TAG_ATTRIBUTES[tag]?.[prop] ?? GLOBAL_ATTRIBUTES[prop];
}

/** Whether `prop` is allowed on `tag` at all, and as what: an attribute (its DOM name) or a
 * property the frame sets on the element (value, checked, …). */
export function allowedProp(tag: string, prop: string): { kind: 'attribute' | 'property'; name: string } | null {
  const kind = kindOf(tag, prop);
  if (kind === undefined) return null;
  return kind === 'prop' ? { kind: 'property', name: prop } : { kind: 'attribute', name: attributeName(prop) };
}

/**
 * An attribute as the frame will set it, or null when it is not allowed on this tag or its
 * value does not fit. `color` values need a CSS parser (the frame's `CSS.supports`); the worker,
 * which has none, passes `isColor` undefined and leaves that check to the frame.
 */
export function checkAttribute(
  tag: string,
  prop: string,
  value: unknown,
  maxChars: number,
  isColor?: (value: string) => boolean,
): { kind: 'attribute'; name: string; value: string | null } | { kind: 'property'; name: string; value: unknown } | null {
  const kind = kindOf(tag, prop);
  if (kind === undefined) return null;
  if (kind === 'prop') {
    if (prop === 'checked' || prop === 'defaultChecked' || prop === 'selected') return typeof value === 'boolean' ? { kind: 'property', name: prop, value } : null;
    if (typeof value === 'number' && Number.isFinite(value)) return { kind: 'property', name: prop, value: String(value) };
    if (typeof value === 'string') return value.length <= maxChars ? { kind: 'property', name: prop, value } : null;
    // a multiple select's value
    if (Array.isArray(value) && tag === 'select' && value.every((item) => typeof item === 'string')) return { kind: 'property', name: prop, value: value.slice(0, 1000) };
    return null;
  }
  const name = attributeName(prop);
  if (kind === 'bool') return typeof value === 'boolean' ? { kind: 'attribute', name, value: value ? '' : null } : null;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
  } else if (typeof value !== 'string') {
    // aria-* and data-* take booleans as their text, as in React
    return typeof value === 'boolean' && /^(aria|data)-/.test(prop) ? { kind: 'attribute', name, value: String(value) } : null;
  }
  const text = String(value);
  if (text.length > maxChars) return null;
  // presentation attributes are CSS values too
  if (SVG_TAGS.has(tag) && prop in SVG_PRESENTATION && SUBSTITUTED.test(text)) return null;
  const fits =
    kind === 'text'
      ? true
      : kind === 'number'
        ? NUMBER.test(text.trim())
        : kind === 'length'
          ? LENGTH.test(text.trim())
          : kind === 'points'
            ? NUMBER_LIST.test(text)
            : kind === 'path'
              ? PATH_DATA.test(text)
              : kind === 'transform'
                ? TRANSFORM.test(text.trim())
                : kind === 'color'
                  ? text === 'none' || isColor === undefined || isColor(text)
                  : kind.oneOf.includes(text);
  return fits ? { kind: 'attribute', name, value: text } : null;
}

// ---- style -------------------------------------------------------------------------------

/**
 * Style properties a component may set (React's camelCase names). The list is the filter:
 * none of these properties has a grammar that can hold url(), image-set(), image() or any
 * other reference — so no background, background-image, border-image, list-style(-image),
 * content, cursor images, filter, backdrop-filter, clip-path, mask, shape-outside,
 * offset-path, marker or custom properties. Their values are parsed by the browser when the
 * frame sets them (`style.setProperty` drops what does not parse for that property); colours
 * are checked as a CSS <color>, and a few properties take keywords only.
 */
const STYLE_PROPERTIES = [
  'color', 'backgroundColor', 'opacity', 'visibility', 'display',
  'position', 'top', 'right', 'bottom', 'left', 'inset', 'zIndex', 'float', 'clear',
  'width', 'height', 'minWidth', 'minHeight', 'maxWidth', 'maxHeight', 'boxSizing', 'aspectRatio',
  'margin', 'marginTop', 'marginRight', 'marginBottom', 'marginLeft', 'marginInline', 'marginBlock',
  'padding', 'paddingTop', 'paddingRight', 'paddingBottom', 'paddingLeft', 'paddingInline', 'paddingBlock',
  'border', 'borderTop', 'borderRight', 'borderBottom', 'borderLeft', 'borderWidth', 'borderStyle', 'borderColor',
  'borderTopWidth', 'borderRightWidth', 'borderBottomWidth', 'borderLeftWidth',
  'borderTopStyle', 'borderRightStyle', 'borderBottomStyle', 'borderLeftStyle',
  'borderTopColor', 'borderRightColor', 'borderBottomColor', 'borderLeftColor',
  'borderRadius', 'borderTopLeftRadius', 'borderTopRightRadius', 'borderBottomLeftRadius', 'borderBottomRightRadius',
  'borderCollapse', 'borderSpacing', 'outline', 'outlineColor', 'outlineStyle', 'outlineWidth', 'outlineOffset', 'boxShadow',
  'flex', 'flexDirection', 'flexWrap', 'flexFlow', 'flexGrow', 'flexShrink', 'flexBasis', 'order',
  'justifyContent', 'justifyItems', 'justifySelf', 'alignItems', 'alignContent', 'alignSelf', 'placeItems', 'placeContent', 'placeSelf',
  'gap', 'rowGap', 'columnGap',
  'gridTemplateColumns', 'gridTemplateRows', 'gridTemplateAreas', 'gridArea', 'gridColumn', 'gridRow',
  'gridColumnStart', 'gridColumnEnd', 'gridRowStart', 'gridRowEnd', 'gridAutoFlow', 'gridAutoColumns', 'gridAutoRows',
  'font', 'fontFamily', 'fontSize', 'fontWeight', 'fontStyle', 'fontVariant', 'fontVariantNumeric', 'lineHeight',
  'letterSpacing', 'wordSpacing', 'textAlign', 'textDecoration', 'textDecorationLine', 'textDecorationStyle', 'textDecorationColor',
  'textTransform', 'textOverflow', 'textIndent', 'textShadow', 'whiteSpace', 'wordBreak', 'overflowWrap', 'hyphens', 'verticalAlign',
  'writingMode', 'overflow', 'overflowX', 'overflowY', 'listStyleType', 'listStylePosition', 'cursor', 'pointerEvents', 'userSelect',
  'transform', 'transformOrigin', 'transition', 'transitionProperty', 'transitionDuration', 'transitionTimingFunction', 'transitionDelay',
  'animation', 'animationName', 'animationDuration', 'animationTimingFunction', 'animationDelay', 'animationIterationCount', 'animationDirection',
  'tableLayout', 'captionSide', 'accentColor', 'caretColor', 'columnCount', 'columnWidth', 'columns', 'columnRule',
  'fill', 'stroke', 'strokeWidth', 'fillOpacity', 'strokeOpacity',
];

const COLOR_PROPERTIES = new Set(['color', 'backgroundColor', 'borderColor', 'borderTopColor', 'borderRightColor', 'borderBottomColor', 'borderLeftColor', 'outlineColor', 'textDecorationColor', 'accentColor', 'caretColor', 'fill', 'stroke']);

/** Properties whose values are single keywords here (their full grammars admit images). */
const KEYWORD_PROPERTIES: Record<string, ReadonlySet<string>> = {
  cursor: new Set(['auto', 'default', 'none', 'pointer', 'text', 'move', 'grab', 'grabbing', 'not-allowed', 'wait', 'progress', 'help', 'crosshair', 'copy', 'zoom-in', 'zoom-out', 'col-resize', 'row-resize', 'ew-resize', 'ns-resize', 'nesw-resize', 'nwse-resize', 'context-menu', 'cell', 'vertical-text', 'alias', 'all-scroll', 'no-drop']),
};
const IDENT = /^-?[a-z][a-z0-9-]*$/i;

/** React's unitless properties: a number is set as it is; any other number gets `px`. */
const UNITLESS = new Set(['opacity', 'zIndex', 'flex', 'flexGrow', 'flexShrink', 'order', 'fontWeight', 'lineHeight', 'gridColumn', 'gridRow', 'gridColumnStart', 'gridColumnEnd', 'gridRowStart', 'gridRowEnd', 'gridArea', 'columnCount', 'animationIterationCount', 'fillOpacity', 'strokeOpacity', 'strokeWidth', 'aspectRatio']);

const STYLE_SET: ReadonlySet<string> = new Set(STYLE_PROPERTIES);
const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/**
 * A style object as the frame sets it: CSS property name → value text, only allowed
 * properties, numbers given React's `px`. `isColor` is the frame's CSS parser (undefined in
 * the worker: the frame checks again). The browser's own parser then refuses a value that does
 * not fit its property.
 */
export function checkStyle(style: unknown, maxChars: number, isColor?: (value: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof style !== 'object' || style === null || Array.isArray(style)) return out;
  for (const [name, raw] of Object.entries(style as Record<string, unknown>)) {
    if (!STYLE_SET.has(name)) continue;
    let value: string;
    if (typeof raw === 'number') {
      if (!Number.isFinite(raw)) continue;
      value = UNITLESS.has(name) || raw === 0 ? String(raw) : `${raw}px`;
    } else if (typeof raw === 'string') {
      value = raw.trim();
    } else continue;
    if (!value || value.length > maxChars || SUBSTITUTED.test(value)) continue;
    if (KEYWORD_PROPERTIES[name] && !KEYWORD_PROPERTIES[name].has(value)) continue;
    if (name === 'listStyleType' && !IDENT.test(value)) continue;
    if (COLOR_PROPERTIES.has(name) && isColor && !isColor(value)) continue;
    out[kebab(name)] = value;
  }
  return out;
}
