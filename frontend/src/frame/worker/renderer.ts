// React in the component's Worker: a renderer (react-reconciler) whose host instances are
// plain records, not DOM nodes. Each commit becomes a batch of ops (tree.ts) posted to the
// frame, which draws them; the person's events come back by element id and are dispatched to
// the handlers here. A ref to an element is an opaque handle (focus, blur, scrollIntoView,
// select), never a node: there is no DOM in a worker.
import { createContext } from 'react';
import Reconciler from 'react-reconciler';
import { ConcurrentRoot, DefaultEventPriority, NoEventPriority } from 'react-reconciler/constants';
import { allowedProp, ELEMENT_METHODS, EVENT_PROPS, handlerNames, isAllowedTag, type DomEvent, type ElementMethod, type WireTarget, type Op, type WireNode, type WireProps, type WorkerMessage } from '../tree';

/** What a ref to an element holds: it can ask the frame to act on the element, nothing more. */
export type ElementHandle = Readonly<Record<ElementMethod, () => void>>;

interface ElementInstance {
  kind: 'element';
  id: number;
  type: string;
  props: Record<string, unknown>;
  wire: WireProps;
  children: Instance[];
  mounted: boolean;
  handle: ElementHandle;
}
interface TextInstance {
  kind: 'text';
  id: number;
  text: string;
  mounted: boolean;
}
type Instance = ElementInstance | TextInstance;
interface Container {
  children: Instance[];
}

const ROOT = 0;
const HOST_CONTEXT = {};

/** The props an element sends to the frame: allowlisted names with plain values, `$on` for
 * its handlers. (The frame checks all of it again; this only keeps the messages small.) */
export function wireProps(type: string, props: Record<string, unknown>, strict: boolean): WireProps {
  const wire: WireProps = {};
  const on: string[] = [];
  for (const [name, value] of Object.entries(props)) {
    if (name === 'children' || name === 'key' || name === 'ref' || value === undefined || value === null) continue;
    if (name === 'dangerouslySetInnerHTML') {
      if (strict) throw new Error('dangerouslySetInnerHTML is not available in a component: render elements, not HTML.');
      continue;
    }
    if (/^on[A-Z]/.test(name)) {
      if (typeof value === 'function' && EVENT_PROPS.has(name)) on.push(name);
      continue;
    }
    if (name === 'style') {
      if (typeof value === 'object' && !Array.isArray(value)) {
        const style: Record<string, string | number> = {};
        for (const [property, text] of Object.entries(value as Record<string, unknown>)) if (typeof text === 'string' || typeof text === 'number') style[property] = text;
        wire.style = style;
      }
      continue;
    }
    if (!allowedProp(type, name)) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') wire[name] = value;
    else if (Array.isArray(value)) wire[name] = value.map(String);
  }
  if (on.length) wire.$on = on.sort();
  return wire;
}

const same = (a: unknown, b: unknown) => a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));

export interface Renderer {
  render(element: React.ReactNode): void;
  /** An event from the frame: calls the handlers along its path, then acknowledges it. */
  dispatch(message: { seq: number; type: DomEvent; path: number[]; target: WireTarget; data: Record<string, unknown> }): void;
}

export function createRenderer(send: (message: WorkerMessage) => void, onError: (error: unknown) => void): Renderer {
  let nextId = 1;
  let ops: Op[] = [];
  const byId = new Map<number, ElementInstance>();
  let currentUpdatePriority: number = NoEventPriority;

  const handleFor = (id: number): ElementHandle =>
    Object.freeze(Object.fromEntries(ELEMENT_METHODS.map((method) => [method, () => byId.get(id)?.mounted && send({ t: 'call', id, method })])) as Record<ElementMethod, () => void>);

  /** A subtree's first appearance in the frame. */
  const mount = (node: Instance): WireNode => {
    node.mounted = true;
    if (node.kind === 'text') return { id: node.id, text: node.text };
    return { id: node.id, tag: node.type, props: node.wire, children: node.children.map(mount) };
  };
  const unmount = (node: Instance) => {
    node.mounted = false;
    if (node.kind === 'element') {
      byId.delete(node.id);
      node.children.forEach(unmount);
    }
  };
  const place = (parent: ElementInstance | Container, parentId: number, child: Instance, before: Instance | null) => {
    const siblings = parent.children;
    const at = siblings.indexOf(child);
    if (at >= 0) siblings.splice(at, 1);
    if (before) siblings.splice(siblings.indexOf(before), 0, child);
    else siblings.push(child);
    const beforeId = before ? before.id : null;
    ops.push(child.mounted ? { op: 'move', parent: parentId, id: child.id, before: beforeId } : { op: 'insert', parent: parentId, before: beforeId, node: mount(child) });
  };
  const remove = (parent: ElementInstance | Container, parentId: number, child: Instance) => {
    const at = parent.children.indexOf(child);
    if (at >= 0) parent.children.splice(at, 1);
    ops.push({ op: 'remove', parent: parentId, id: child.id });
    unmount(child);
  };

  const config = {
    rendererPackageName: 'wright-frame',
    rendererVersion: '1',
    extraDevToolsConfig: null,
    isPrimaryRenderer: true,
    warnsIfNotActing: false,
    supportsMutation: true,
    supportsPersistence: false,
    supportsHydration: false,
    supportsMicrotasks: true,
    supportsTestSelectors: false,
    supportsResources: false,
    supportsSingletons: false,
    scheduleMicrotask: queueMicrotask,
    scheduleTimeout: setTimeout,
    cancelTimeout: clearTimeout,
    noTimeout: -1,
    NotPendingTransition: null,
    HostTransitionContext: createContext(null),

    createInstance(type: string, props: Record<string, unknown>): ElementInstance {
      if (!isAllowedTag(type)) {
        throw new Error(`<${type}> cannot be drawn by a component: it runs without a DOM and may use the UI primitives and plain elements (div, span, p, headings, lists, tables, forms and their fields, basic SVG shapes) — no links, images, frames, media, scripts or styles.`);
      }
      const id = nextId++;
      const instance: ElementInstance = { kind: 'element', id, type, props, wire: wireProps(type, props, true), children: [], mounted: false, handle: handleFor(id) };
      byId.set(id, instance);
      return instance;
    },
    createTextInstance(text: string): TextInstance {
      return { kind: 'text', id: nextId++, text, mounted: false };
    },
    appendInitialChild(parent: ElementInstance, child: Instance) {
      parent.children.push(child);
    },
    finalizeInitialChildren: () => false,
    shouldSetTextContent: () => false,
    // one context for the whole tree (React's development build wants it to be an object)
    getRootHostContext: () => HOST_CONTEXT,
    getChildHostContext: (parentContext: unknown) => parentContext,
    getPublicInstance: (instance: Instance) => (instance.kind === 'element' ? instance.handle : null),
    prepareForCommit: () => null,
    resetAfterCommit() {
      if (!ops.length) return;
      const batch = ops;
      ops = [];
      send({ t: 'ops', ops: batch });
    },
    preparePortalMount() {},
    getInstanceFromNode: () => null,
    beforeActiveInstanceBlur() {},
    afterActiveInstanceBlur() {},
    prepareScopeUpdate() {},
    getInstanceFromScope: () => null,
    detachDeletedInstance() {},
    requestPostPaintCallback() {},
    setCurrentUpdatePriority(priority: number) {
      currentUpdatePriority = priority;
    },
    getCurrentUpdatePriority: () => currentUpdatePriority,
    resolveUpdatePriority: () => (currentUpdatePriority !== NoEventPriority ? currentUpdatePriority : DefaultEventPriority),
    trackSchedulerEvent() {},
    resolveEventType: () => null,
    resolveEventTimeStamp: () => -1.1,
    shouldAttemptEagerTransition: () => false,
    maySuspendCommit: () => false,
    maySuspendCommitOnUpdate: () => false,
    maySuspendCommitInSyncRender: () => false,
    preloadInstance: () => true,
    startSuspendingCommit: () => null,
    suspendInstance() {},
    suspendOnActiveViewTransition() {},
    waitForCommitToBeReady: () => null,
    getSuspendedCommitReason: () => null,
    resetFormInstance() {},
    bindToConsole: (method: 'log', args: unknown[]) => console[method].bind(console, ...args),
    // view transitions and fragment refs: nothing to animate or measure here
    applyViewTransitionName() {},
    restoreViewTransitionName() {},
    cancelViewTransitionName() {},
    cancelRootViewTransitionName() {},
    restoreRootViewTransitionName() {},
    removeRootViewTransitionClone() {},
    measureInstance: () => null,
    measureClonedInstance: () => null,
    wasInstanceInViewport: () => true,
    hasInstanceChanged: () => false,
    hasInstanceAffectedParent: () => false,
    startViewTransition(_state: unknown, _container: unknown, _types: unknown, mutation: () => void, layout: () => void, _after: () => void, spawned: () => void) {
      mutation();
      layout();
      spawned();
      return null;
    },
    stopViewTransition() {},
    addViewTransitionFinishedListener() {},
    createViewTransitionInstance: () => null,
    getCurrentGestureOffset: () => 0,
    createFragmentInstance: () => null,
    updateFragmentInstanceFiber() {},
    commitNewChildToFragmentInstance() {},
    deleteChildFromFragmentInstance() {},

    // mutation
    appendChild(parent: ElementInstance, child: Instance) {
      place(parent, parent.id, child, null);
    },
    appendChildToContainer(container: Container, child: Instance) {
      place(container, ROOT, child, null);
    },
    insertBefore(parent: ElementInstance, child: Instance, before: Instance) {
      place(parent, parent.id, child, before);
    },
    insertInContainerBefore(container: Container, child: Instance, before: Instance) {
      place(container, ROOT, child, before);
    },
    removeChild(parent: ElementInstance, child: Instance) {
      remove(parent, parent.id, child);
    },
    removeChildFromContainer(container: Container, child: Instance) {
      remove(container, ROOT, child);
    },
    clearContainer(container: Container) {
      container.children.forEach(unmount);
      container.children = [];
      ops.push({ op: 'clear' });
    },
    resetTextContent() {},
    commitTextUpdate(text: TextInstance, _old: string, next: string) {
      text.text = next;
      ops.push({ op: 'text', id: text.id, text: next });
    },
    commitMount() {},
    commitUpdate(instance: ElementInstance, type: string, _old: Record<string, unknown>, props: Record<string, unknown>) {
      instance.props = props;
      const wire = wireProps(type, props, false);
      const set: WireProps = {};
      const unset: string[] = [];
      for (const [name, value] of Object.entries(wire)) if (!same(instance.wire[name], value)) set[name] = value;
      for (const name of Object.keys(instance.wire)) if (!(name in wire)) unset.push(name);
      instance.wire = wire;
      if (unset.length || Object.keys(set).length) ops.push({ op: 'props', id: instance.id, set, unset });
    },
    hideInstance(instance: ElementInstance) {
      ops.push({ op: 'hide', id: instance.id });
    },
    hideTextInstance(text: TextInstance) {
      ops.push({ op: 'hide', id: text.id });
    },
    unhideInstance(instance: ElementInstance) {
      ops.push({ op: 'unhide', id: instance.id });
    },
    unhideTextInstance(text: TextInstance) {
      ops.push({ op: 'unhide', id: text.id });
    },
  };

  const reconciler = Reconciler(config as unknown as Parameters<typeof Reconciler>[0]);
  const container: Container = { children: [] };
  const report = (error: unknown) => onError(error);
  // an error a component's own boundary caught is the component's business (as with react-dom)
  const caught = (error: unknown) => console.error(error);
  const root = reconciler.createContainer(container, ConcurrentRoot, null, false, null, 'w', report, caught, report, () => {}, null);

  return {
    render(element) {
      reconciler.updateContainer(element, root, null, null);
    },
    dispatch({ seq, type, path, target, data }) {
      try {
        const targetInstance = target.id === null ? undefined : byId.get(target.id);
        const targetObject = Object.freeze({ ...targetInstance?.handle, value: target.value, checked: target.checked, name: target.name, type: target.type, id: targetInstance ? String(targetInstance.props.id ?? '') : '' });
        let stopped = false;
        let prevented = false;
        const event: Record<string, unknown> = {
          ...data,
          type: type === 'focusin' ? 'focus' : type === 'focusout' ? 'blur' : type,
          target: targetObject,
          currentTarget: targetObject,
          nativeEvent: data,
          timeStamp: Date.now(),
          bubbles: type !== 'mouseenter' && type !== 'mouseleave',
          preventDefault: () => (prevented = true),
          isDefaultPrevented: () => prevented,
          get defaultPrevented() {
            return prevented;
          },
          stopPropagation: () => (stopped = true),
          isPropagationStopped: () => stopped,
          persist() {},
        };
        // which handlers an event calls depends on what it happened on (a checkbox changes on
        // `change`, a text field on `input`), for the target and every ancestor alike
        const names = handlerNames(type, targetInstance?.type ?? '', targetInstance?.props.type);
        reconciler.discreteUpdates(() => {
          for (const id of Array.isArray(path) ? path : []) {
            const instance = byId.get(id);
            if (!instance?.mounted) continue;
            event.currentTarget = instance === targetInstance ? targetObject : instance.handle;
            for (const name of names) {
              const handler = instance.props[name];
              if (typeof handler === 'function') handler(event);
            }
            if (stopped) break;
          }
        }, undefined, undefined, undefined, undefined);
        reconciler.flushSyncWork();
      } catch (error) {
        onError(error);
      } finally {
        // after the commit this event caused, so the frame knows its fields are current
        send({ t: 'ack', seq });
      }
    },
  };
}
