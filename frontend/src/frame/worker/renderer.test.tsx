// The worker's React renderer end to end with the frame's surface (in jsdom here; messages
// between them are delayed as postMessage delays them): components draw, events reach their
// handlers, controlled fields keep what the person types, refs are handles, and elements a
// component may not draw fail in its error boundary.
import { Component, createRef, Suspense, use, useState, type ReactNode } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Surface } from '../runtime/surface';
import { DEFAULT_LIMITS, type WorkerMessage } from '../tree';
import { primitives } from './primitives';
import { createRenderer, type ElementHandle, type Renderer } from './renderer';

const { Button, Card, Checkbox, Select, Text } = primitives;

const isColor = (value: string) => {
  const style = document.createElement('div').style;
  style.setProperty('color', value);
  return style.getPropertyValue('color') !== '';
};

const later = (work: () => void) => setTimeout(work, 1);
const roots: HTMLElement[] = [];
afterEach(() => roots.splice(0).forEach((root) => root.remove()));

/** A frame and its worker, wired as runtime/main.ts and worker/main.tsx wire them. */
function mount(element: ReactNode) {
  const root = document.createElement('div');
  document.body.append(root);
  roots.push(root);
  const errors: string[] = [];
  const fromWorker: WorkerMessage[] = [];
  // as if the person had just acted in the frame: the focus gate has its own test (surface.test.ts)
  const surface = new Surface(root, (message) => later(() => renderer.dispatch(message)), isColor, DEFAULT_LIMITS, () => true);
  const renderer: Renderer = createRenderer(
    (message) => {
      fromWorker.push(message);
      later(() => {
        if (message.t === 'ops') surface.apply(message.ops);
        else if (message.t === 'ack') surface.ack(message.seq);
        else if (message.t === 'call') surface.call(message.id, message.method);
        else if (message.t === 'error') errors.push(message.message);
      });
    },
    (error) => errors.push(String((error as Error)?.message ?? error)),
  );
  renderer.render(element);
  return { root, errors, fromWorker };
}

class Boundary extends Component<{ children: ReactNode }, { error: string | null }> {
  state = { error: null as string | null };
  static getDerivedStateFromError(error: Error) {
    return { error: error.message };
  }
  render() {
    return this.state.error ? <pre className="w-error">{this.state.error}</pre> : this.props.children;
  }
}

describe('the worker renderer', () => {
  it('draws primitives and re-renders on a click', async () => {
    function Counter() {
      const [n, setN] = useState(0);
      return (
        <Card title="Counter">
          <Text>n={n}</Text>
          <Button variant="primary" onClick={() => setN(n + 1)}>
            Add
          </Button>
        </Card>
      );
    }
    const { root } = mount(<Counter />);
    await vi.waitFor(() => expect(root.textContent).toBe('Countern=0Add'));
    expect(root.querySelector('section.w-card > button.w-button-primary')).not.toBeNull();
    root.querySelector('button')!.click();
    root.querySelector('button')!.click();
    await vi.waitFor(() => expect(root.querySelector('p')!.textContent).toBe('n=2'));
  });

  it('keeps a controlled field’s keystrokes and applies what the component makes of them', async () => {
    const seen: string[] = [];
    function Shout() {
      const [text, setText] = useState('');
      return (
        <input
          aria-label="Shout"
          value={text}
          onChange={(event: { target: { value: string } }) => {
            seen.push(event.target.value);
            setText(event.target.value.toUpperCase());
          }}
        />
      );
    }
    const { root } = mount(<Shout />);
    await vi.waitFor(() => expect(root.querySelector('input')).not.toBeNull());
    const input = root.querySelector('input')!;
    input.focus();
    // typed faster than the worker answers: each keystroke builds on what is in the field
    for (const value of ['h', 'hi', 'hi!']) {
      input.value = value;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }
    await vi.waitFor(() => expect(input.value).toBe('HI!'));
    expect(seen).toEqual(['h', 'hi', 'hi!']);
  });

  it('gives checkboxes and selects their values, and stops propagation when asked', async () => {
    const log: string[] = [];
    function Form() {
      const [on, setOn] = useState(false);
      const [size, setSize] = useState('m');
      return (
        <div onClick={() => log.push('outer')}>
          <Checkbox label="On" checked={on} onChange={(event: { target: { checked: boolean } }) => setOn(event.target.checked)} />
          <Select options={['s', 'm', 'l']} value={size} onChange={(event: { target: { value: string } }) => setSize(event.target.value)} />
          <button
            onClick={(event: { stopPropagation(): void }) => {
              log.push('inner');
              event.stopPropagation();
            }}
          >
            stop
          </button>
          <Text>
            {String(on)} {size}
          </Text>
        </div>
      );
    }
    const { root } = mount(<Form />);
    await vi.waitFor(() => expect(root.querySelector('p')?.textContent).toBe('false m'));
    expect(root.querySelector('select')!.value).toBe('m');
    root.querySelector<HTMLInputElement>('input[type="checkbox"]')!.click();
    const select = root.querySelector('select')!;
    select.value = 'l';
    select.dispatchEvent(new Event('input', { bubbles: true }));
    select.dispatchEvent(new Event('change', { bubbles: true }));
    await vi.waitFor(() => expect(root.querySelector('p')!.textContent).toBe('true l'));
    root.querySelector('button')!.click();
    await vi.waitFor(() => expect(log).toContain('inner'));
    // the checkbox's click bubbled to the outer div; the button's did not
    expect(log).toEqual(['outer', 'inner']);
  });

  it('moves keyed children instead of redrawing them', async () => {
    let reverse: () => void = () => {};
    function Items() {
      const [items, setItems] = useState(['a', 'b', 'c']);
      reverse = () => setItems((previous) => [...previous].reverse());
      return (
        <ul>
          {items.map((item) => (
            <li key={item}>{item}</li>
          ))}
        </ul>
      );
    }
    const { root, fromWorker } = mount(<Items />);
    await vi.waitFor(() => expect(root.textContent).toBe('abc'));
    const first = root.querySelector('li');
    reverse();
    await vi.waitFor(() => expect(root.textContent).toBe('cba'));
    expect(root.querySelectorAll('li')[2]).toBe(first);
    expect(fromWorker.flatMap((message) => (message.t === 'ops' ? message.ops.map((op) => op.op) : [])).filter((op) => op === 'insert')).toEqual(['insert']);
  });

  it('hides content that suspends behind its fallback, and shows it again', async () => {
    let release: () => void = () => {};
    const waiting = new Promise<void>((resolve) => (release = resolve));
    let wait: () => void = () => {};
    function Slow() {
      const [blocked, setBlocked] = useState(false);
      wait = () => setBlocked(true);
      if (blocked) use(waiting);
      return <p>content</p>;
    }
    const { root } = mount(
      <Suspense fallback={<span>loading</span>}>
        <Slow />
      </Suspense>,
    );
    await vi.waitFor(() => expect(root.textContent).toBe('content'));
    wait();
    await vi.waitFor(() => expect(root.querySelector('span')?.textContent).toBe('loading'));
    expect(root.querySelector('p')!.style.display).toBe('none');
    release();
    await vi.waitFor(() => expect(root.querySelector('span')).toBeNull());
    expect(root.querySelector('p')!.style.display).toBe('');
  });

  it('hands a ref a handle, not a node, that focuses its element in the frame', async () => {
    const ref = createRef<ElementHandle>();
    const { root } = mount(<input aria-label="Name" ref={ref as never} />);
    await vi.waitFor(() => expect(root.querySelector('input')).not.toBeNull());
    expect(ref.current).not.toBeInstanceOf(Node);
    expect(Object.keys(ref.current!).sort()).toEqual(['blur', 'focus', 'scrollIntoView', 'select']);
    expect(Object.isFrozen(ref.current)).toBe(true);
    ref.current!.focus();
    await vi.waitFor(() => expect(document.activeElement).toBe(root.querySelector('input')));
  });

  it('fails in the error boundary for an element that may not be drawn, and for raw HTML', async () => {
    // caught by the component's own boundaries: logged in the worker, not reported as the component's error
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const { root, errors } = mount(
      <div>
        <Boundary>
          <a href="http://x.test/">link</a>
        </Boundary>
        <Boundary>
          <iframe src="http://x.test/" />
        </Boundary>
        <Boundary>
          <div dangerouslySetInnerHTML={{ __html: '<img src=x>' }} />
        </Boundary>
        <p>still here</p>
      </div>,
    );
    await vi.waitFor(() => expect(root.querySelectorAll('pre.w-error')).toHaveLength(3));
    const messages = [...root.querySelectorAll('pre')].map((pre) => pre.textContent);
    expect(messages[0]).toMatch(/^<a> cannot be drawn by a component/);
    expect(messages[1]).toMatch(/^<iframe> cannot be drawn by a component/);
    expect(messages[2]).toMatch(/^dangerouslySetInnerHTML is not available/);
    expect(root.querySelector('a, iframe, img')).toBeNull();
    expect(root.querySelector('p')!.textContent).toBe('still here');
    expect(errors).toEqual([]);
    expect(logged).toHaveBeenCalledTimes(3);
    logged.mockRestore();
  });
});
