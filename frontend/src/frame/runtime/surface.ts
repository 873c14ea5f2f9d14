// The frame's drawing surface: it applies the tree a component's worker sends (tree.ts) to the
// DOM, admitting only allowlisted tags, attributes, values and style properties, and turns the
// person's events into messages for the worker. This is the only code that creates DOM for a
// component, and it creates nothing that names a URL: whatever the worker sends, the browser
// has nothing to resolve, preconnect, fetch or navigate to.
//
// Controlled inputs: the worker answers an event asynchronously, so a field's value from the
// worker may be older than what the person has typed since. While events the frame sent are
// not yet acknowledged, the value of a field the person is changing is left alone; once all
// are, the field takes the worker's value (as React restores a controlled input).
import {
  allowedProp,
  checkAttribute,
  checkStyle,
  DEFAULT_LIMITS,
  DOM_EVENTS,
  ELEMENT_METHODS,
  EVENT_PROPS,
  HTML_TAGS,
  SVG_TAGS,
  type DomEvent,
  type WireTarget,
  type FrameToWorker,
  type SurfaceLimits,
  type WireNode,
  type WireProps,
} from '../tree';

const SVG_NS = 'http://www.w3.org/2000/svg';
const ROOT = 0;

interface Info {
  id: number;
  tag: string;
  /** The React event props the worker has handlers for. */
  on: Set<string>;
  /** Controlled values the worker last gave (`value`, `checked`), to restore after the person's edits. */
  controlled: Map<string, unknown>;
  hidden: boolean;
  /** The style the worker gave (for `unhide` to restore a display of its own). */
  style?: Record<string, string>;
  /** A hidden text node's text. */
  text?: string;
}

export type EventSink = (message: Extract<FrameToWorker, { t: 'event' }>) => void;

/** The DOM a surface needs, taken once so that nothing drawn (a `name` on some element that
 * shadows a document property) can change it later. */
function domOf(document: Document) {
  return {
    createElement: document.createElement.bind(document),
    createElementNS: document.createElementNS.bind(document),
    createTextNode: document.createTextNode.bind(document),
    activeElement: () => document.activeElement,
  };
}

export class Surface {
  private readonly nodes = new Map<number, Node>();
  private readonly info = new WeakMap<Node, Info>();
  private readonly dom: ReturnType<typeof domOf>;
  private seq = 0;
  private acked = 0;
  /** Fields the person changed since the worker last caught up. */
  private readonly edited = new Set<Element>();
  private failure: string | null = null;
  private readonly selects = new Set<HTMLSelectElement>();

  constructor(
    private readonly root: HTMLElement,
    private readonly send: EventSink,
    private readonly isColor: (value: string) => boolean,
    private readonly limits: SurfaceLimits = DEFAULT_LIMITS,
    /** Whether a ref's focus()/select() may take the keyboard now: only right after the
     * person's own pointer down or key in this frame (runtime/main.ts tracks those). */
    private readonly personActed: () => boolean = () => false,
  ) {
    this.dom = domOf(root.ownerDocument);
    this.info.set(root, { id: ROOT, tag: 'root', on: new Set(), controlled: new Map(), hidden: false });
    this.nodes.set(ROOT, root);
    for (const type of Object.keys(DOM_EVENTS) as DomEvent[]) {
      if (type === 'mouseenter' || type === 'mouseleave') continue;
      root.addEventListener(type, (event) => this.onEvent(type, event));
    }
  }

  /** Why the surface stopped drawing (a limit), or null. */
  get failed(): string | null {
    return this.failure;
  }

  get size(): number {
    return this.nodes.size - 1;
  }

  /** Applies a batch of ops from the worker; anything malformed or refused is skipped. Throws
   * only when a limit is reached (the caller stops the component). */
  apply(ops: unknown): void {
    if (this.failure || !Array.isArray(ops)) return;
    for (const op of ops) {
      if (typeof op !== 'object' || op === null) continue;
      this.applyOne(op as Record<string, unknown>);
      if (this.failure) throw new Error(this.failure);
    }
    this.syncSelects();
  }

  /** The worker has handled every event up to `seq`. */
  ack(seq: unknown): void {
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) return;
    this.acked = Math.max(this.acked, Math.min(seq, this.seq));
    if (this.acked === this.seq) {
      for (const element of this.edited) this.restore(element);
      this.edited.clear();
    }
  }

  /** A ref's method, called by the component. */
  call(id: unknown, method: unknown): void {
    if (typeof id !== 'number' || !(ELEMENT_METHODS as readonly unknown[]).includes(method)) return;
    const element = this.nodes.get(id);
    if (!(element instanceof Element) || element === this.root) return;
    // Focus moves where the keys go: a component may move it only as the direct result of
    // the person's gesture in its frame, never from a timer while they type in the app.
    if ((method === 'focus' || method === 'select') && !this.personActed()) return;
    if (method === 'focus' && element instanceof HTMLElement) element.focus();
    else if (method === 'blur' && element instanceof HTMLElement) element.blur();
    else if (method === 'scrollIntoView') element.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    else if (method === 'select' && (element instanceof HTMLInputElement || element instanceof HTMLTextAreaElement)) element.select();
  }

  // ---- ops ---------------------------------------------------------------------------------

  private applyOne(op: Record<string, unknown>) {
    switch (op.op) {
      case 'insert': {
        const parent = this.element(op.parent);
        const before = op.before === null ? null : this.child(parent, op.before);
        if (!parent || before === undefined) return;
        const node = this.build(op.node, 0);
        if (node) parent.insertBefore(node, before);
        return;
      }
      case 'move': {
        const parent = this.element(op.parent);
        const node = typeof op.id === 'number' && op.id !== ROOT ? this.nodes.get(op.id) : undefined;
        const before = op.before === null ? null : this.child(parent, op.before);
        // only within the same parent: React moves keyed children among their siblings
        if (!parent || !node || node.parentNode !== parent || before === undefined || node === before) return;
        parent.insertBefore(node, before);
        return;
      }
      case 'remove': {
        const parent = this.element(op.parent);
        const node = this.child(parent, op.id);
        if (!parent || !node) return;
        parent.removeChild(node);
        this.forget(node);
        return;
      }
      case 'props': {
        const element = this.element(op.id);
        if (!element || element === this.root || typeof op.set !== 'object' || op.set === null || !Array.isArray(op.unset)) return;
        this.setProps(element, op.set as WireProps, op.unset.filter((name): name is string => typeof name === 'string'));
        return;
      }
      case 'text': {
        const node = typeof op.id === 'number' ? this.nodes.get(op.id) : undefined;
        if (!(node instanceof Text) || typeof op.text !== 'string') return;
        const text = this.text(op.text);
        const info = this.info.get(node)!;
        if (info.hidden) info.text = text;
        else node.data = text;
        return;
      }
      case 'hide':
      case 'unhide': {
        const node = typeof op.id === 'number' && op.id !== ROOT ? this.nodes.get(op.id) : undefined;
        if (!node) return;
        const info = this.info.get(node)!;
        const hide = op.op === 'hide';
        if (info.hidden === hide) return;
        info.hidden = hide;
        if (node instanceof Text) {
          if (hide) [info.text, node.data] = [node.data, ''];
          else node.data = info.text ?? '';
        } else if (node instanceof HTMLElement || node instanceof SVGElement) {
          if (hide) node.style.setProperty('display', 'none', 'important');
          else {
            node.style.removeProperty('display');
            if (info.style?.display) node.style.setProperty('display', info.style.display);
          }
        }
        return;
      }
      case 'clear':
        for (const child of [...this.root.childNodes]) {
          this.root.removeChild(child);
          this.forget(child);
        }
        return;
    }
  }

  private element(id: unknown): Element | undefined {
    if (typeof id !== 'number') return undefined;
    const node = this.nodes.get(id);
    return node instanceof Element ? node : undefined;
  }

  /** A live child of `parent` by id: undefined when there is none (the op is skipped). */
  private child(parent: Element | undefined, id: unknown): Node | undefined {
    if (!parent || typeof id !== 'number' || id === ROOT) return undefined;
    const node = this.nodes.get(id);
    return node && node.parentNode === parent ? node : undefined;
  }

  private text(text: string): string {
    return text.length > this.limits.maxTextChars ? text.slice(0, this.limits.maxTextChars) : text;
  }

  /** Builds a new subtree; a refused element is left out with its children. */
  private build(wire: unknown, depth: number): Node | null {
    if (typeof wire !== 'object' || wire === null) return null;
    const node = wire as Partial<WireNode> & Record<string, unknown>;
    if (typeof node.id !== 'number' || !Number.isSafeInteger(node.id) || node.id <= ROOT || this.nodes.has(node.id)) return null;
    if (depth >= this.limits.maxDepth) {
      this.failure = `the component nests elements more than ${this.limits.maxDepth} deep`;
      return null;
    }
    if (this.nodes.size > this.limits.maxNodes) {
      this.failure = `the component draws more than ${this.limits.maxNodes} elements and text nodes`;
      return null;
    }
    let created: Node;
    if (typeof node.text === 'string' && node.tag === undefined) {
      created = this.dom.createTextNode(this.text(node.text));
      this.info.set(created, { id: node.id, tag: '#text', on: new Set(), controlled: new Map(), hidden: false });
    } else {
      const tag = node.tag;
      if (typeof tag !== 'string') return null;
      let element: Element;
      if (HTML_TAGS.has(tag)) element = this.dom.createElement(tag);
      else if (SVG_TAGS.has(tag)) element = this.dom.createElementNS(SVG_NS, tag);
      else return null;
      created = element;
      if (element instanceof HTMLSelectElement) this.selects.add(element);
      this.info.set(element, { id: node.id, tag, on: new Set(), controlled: new Map(), hidden: false });
      if (typeof node.props === 'object' && node.props !== null) this.setProps(element, node.props as WireProps, []);
      if (Array.isArray(node.children)) {
        this.nodes.set(node.id, element);
        for (const child of node.children) {
          const built = this.build(child, depth + 1);
          if (this.failure) break;
          if (built) element.appendChild(built);
        }
      }
    }
    this.nodes.set(node.id, created);
    return created;
  }

  private forget(node: Node) {
    const info = this.info.get(node);
    if (info) this.nodes.delete(info.id);
    if (node instanceof Element) this.edited.delete(node);
    if (node instanceof HTMLSelectElement) this.selects.delete(node);
    for (const child of node.childNodes) this.forget(child);
  }

  private setProps(element: Element, set: WireProps, unset: string[]) {
    const info = this.info.get(element)!;
    const tag = info.tag;
    for (const name of unset) this.setProp(element, info, tag, name, undefined);
    for (const [name, value] of Object.entries(set)) this.setProp(element, info, tag, name, value);
    if (info.hidden && (element instanceof HTMLElement || element instanceof SVGElement)) element.style.setProperty('display', 'none', 'important');
  }

  private setProp(element: Element, info: Info, tag: string, name: string, value: unknown) {
    if (name === '$on') {
      const wanted = new Set(Array.isArray(value) ? value.filter((event): event is string => typeof event === 'string' && EVENT_PROPS.has(event)) : []);
      this.listenForHover(element, info, wanted);
      info.on = wanted;
      return;
    }
    if (name === 'style') {
      // written whole each time: a shorthand's longhands go with it (setProps hides again after)
      const style = (element as HTMLElement | SVGElement).style;
      style.cssText = '';
      info.style = value === undefined ? undefined : checkStyle(value, this.limits.maxValueChars, this.isColor);
      for (const [property, text] of Object.entries(info.style ?? {})) style.setProperty(property, text);
      return;
    }
    if (value === undefined) {
      // removed: a controlled field becomes uncontrolled; an attribute goes
      info.controlled.delete(name);
      const allowed = allowedProp(tag, name);
      if (allowed?.kind === 'attribute') element.removeAttribute(allowed.name);
      return;
    }
    const checked = checkAttribute(tag, name, value, this.limits.maxValueChars, this.isColor);
    if (!checked) return;
    if (checked.kind === 'attribute') {
      if (checked.value === null) element.removeAttribute(checked.name);
      else element.setAttribute(checked.name, checked.value);
      return;
    }
    const field = element as HTMLInputElement & HTMLSelectElement & HTMLOptionElement;
    switch (checked.name) {
      case 'value':
      case 'checked':
        info.controlled.set(checked.name, checked.value);
        // the person is changing this field and the worker has not caught up: keep what they typed
        if (this.seq > this.acked && this.edited.has(element)) return;
        this.restore(element);
        return;
      case 'defaultValue':
        if (tag === 'select') info.controlled.set('defaultValue', checked.value);
        else field.defaultValue = String(checked.value);
        return;
      case 'defaultChecked':
        field.defaultChecked = checked.value === true;
        return;
      case 'selected':
        field.selected = checked.value === true;
        return;
    }
  }

  /** Gives a field the value the worker holds for it (when it holds one). */
  private restore(element: Element) {
    const info = this.info.get(element);
    if (!info) return;
    const field = element as HTMLInputElement & HTMLSelectElement;
    if (info.controlled.has('checked')) {
      const checked = info.controlled.get('checked') === true;
      if (field.checked !== checked) field.checked = checked;
    }
    if (info.controlled.has('value')) {
      const value = info.controlled.get('value');
      if (element instanceof HTMLSelectElement && Array.isArray(value)) {
        for (const option of element.options) option.selected = value.includes(option.value);
      } else if (field.value !== String(value)) field.value = String(value);
    }
  }

  /** A select's value can only be set once its options are there: after every batch. */
  private syncSelects() {
    for (const node of this.selects) {
      const info = this.info.get(node)!;
      if (info.controlled.has('value')) {
        if (!(this.seq > this.acked && this.edited.has(node))) this.restore(node);
      } else if (info.controlled.has('defaultValue')) {
        node.value = String(info.controlled.get('defaultValue'));
        info.controlled.delete('defaultValue');
      }
    }
  }

  // ---- events ------------------------------------------------------------------------------

  private readonly hoverListeners = new WeakMap<Element, Map<string, (event: Event) => void>>();

  private listenForHover(element: Element, info: Info, wanted: Set<string>) {
    let listeners = this.hoverListeners.get(element);
    for (const [type, prop] of [['mouseenter', 'onMouseEnter'], ['mouseleave', 'onMouseLeave']] as const) {
      const has = listeners?.has(type);
      if (wanted.has(prop) && !has) {
        if (!listeners) this.hoverListeners.set(element, (listeners = new Map()));
        const listener = (event: Event) => this.dispatch(type, [info.id], element, eventData(event));
        listeners.set(type, listener);
        element.addEventListener(type, listener);
      } else if (!wanted.has(prop) && has) {
        element.removeEventListener(type, listeners!.get(type)!);
        listeners!.delete(type);
      }
    }
  }

  private onEvent(type: DomEvent, event: Event) {
    // The sandbox (no allow-forms) blocks every form submission before its submit event, so the
    // surface submits for the person: a submit button's click, or Enter in a form's text field.
    if (type === 'submit') {
      event.preventDefault();
      return;
    }
    const { path, target } = this.listeners(type, event.target as Node | null);
    const field = target && this.info.get(target);
    const isEdit = type === 'input' || type === 'change';
    if (isEdit && target && field?.controlled.size) this.edited.add(target);
    if (path.length) this.dispatch(type, path, target, eventData(event));
    // a controlled field nobody listens to keeps the worker's value, as in React
    else if (isEdit && target && this.seq === this.acked) queueMicrotask(() => this.restore(target));
    const form = submits(type, event, this.root);
    if (form) this.submit(form);
  }

  /** The ids of the elements from `start` up that listen for this event, and the first element. */
  private listeners(type: DomEvent, start: Node | null): { path: number[]; target: Element | null } {
    const names = DOM_EVENTS[type] as readonly string[];
    const path: number[] = [];
    let target: Element | null = null;
    for (let node = start; node && node !== this.root; node = node.parentNode) {
      const info = this.info.get(node);
      if (!info || !(node instanceof Element)) continue;
      target ??= node;
      if (names.some((name) => info.on.has(name))) path.push(info.id);
    }
    return { path, target };
  }

  /** What a form's submission would do, minus the request: check the fields (the browser shows
   * what is wrong), then the submit event with the form's fields. */
  private submit(form: HTMLFormElement) {
    if (!form.noValidate && !form.reportValidity()) return;
    const { path } = this.listeners('submit', form);
    if (path.length) this.dispatch('submit', path, form, { formData: formFields(form) });
  }

  private dispatch(type: DomEvent, path: number[], target: Element | null, data: Record<string, unknown>) {
    this.seq += 1;
    this.send({ t: 'event', seq: this.seq, type, path, target: describe(target, target ? (this.info.get(target)?.id ?? null) : null), data });
  }
}

/** The form a click or key submits: a submit button's, or a single-line field's on Enter. */
function submits(type: DomEvent, event: Event, root: HTMLElement): HTMLFormElement | null {
  let form: HTMLFormElement | null = null;
  if (type === 'click' && event instanceof MouseEvent && event.button === 0) {
    const button = (event.target as Element | null)?.closest?.('button, input');
    if ((button instanceof HTMLButtonElement || button instanceof HTMLInputElement) && button.type === 'submit' && !button.disabled) form = button.form;
  } else if (type === 'keydown' && event instanceof KeyboardEvent && event.key === 'Enter' && !event.isComposing) {
    const field = event.target;
    const singleLine = field instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color', 'hidden'].includes(field.type);
    if (singleLine) form = field.form;
  }
  return form && root.contains(form) ? form : null;
}

function describe(element: Element | null, id: number | null): WireTarget {
  const target: WireTarget = { id };
  if (element instanceof HTMLSelectElement) {
    target.value = element.multiple ? [...element.selectedOptions].map((option) => option.value) : element.value;
    target.name = element.name;
  } else if (element instanceof HTMLInputElement) {
    target.value = element.value;
    target.checked = element.checked;
    target.name = element.name;
    target.type = element.type;
  } else if (element instanceof HTMLTextAreaElement || element instanceof HTMLButtonElement) {
    target.value = element.value;
    target.name = element.name;
  }
  return target;
}

/** The parts of an event a handler may use: keys, modifiers, pointer position. */
function eventData(event: Event): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  if (event instanceof KeyboardEvent) {
    Object.assign(data, { key: event.key, code: event.code, repeat: event.repeat, altKey: event.altKey, ctrlKey: event.ctrlKey, metaKey: event.metaKey, shiftKey: event.shiftKey });
  } else if (event instanceof MouseEvent) {
    Object.assign(data, {
      clientX: event.clientX,
      clientY: event.clientY,
      offsetX: event.offsetX,
      offsetY: event.offsetY,
      button: event.button,
      buttons: event.buttons,
      detail: event.detail,
      altKey: event.altKey,
      ctrlKey: event.ctrlKey,
      metaKey: event.metaKey,
      shiftKey: event.shiftKey,
    });
  }
  return data;
}

/** A form's fields as a submission would send them (name → value, or values when repeated). */
function formFields(form: HTMLFormElement): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = {};
  for (const element of form.elements) {
    const field = element as HTMLInputElement;
    if (!field.name || field.disabled || field instanceof HTMLButtonElement || field.type === 'submit' || field.type === 'reset' || field.type === 'button') continue;
    if ((field.type === 'checkbox' || field.type === 'radio') && !field.checked) continue;
    const values = field instanceof HTMLSelectElement ? [...field.selectedOptions].map((option) => option.value) : [field.value];
    for (const value of values) {
      const previous = fields[field.name];
      fields[field.name] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
    }
  }
  return fields;
}
