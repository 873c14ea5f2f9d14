// The frame's drawing surface against ops a hostile worker could send: only allowlisted
// elements, attributes and style properties reach the DOM, nothing that names a URL, and the
// limits hold. (The same, end to end in Chromium with its net log: e2e/netlog.e2e.ts.)
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FrameToWorker, Op, SurfaceLimits, WireNode } from '../tree';
import { DEFAULT_LIMITS } from '../tree';
import { Surface } from './surface';

/** jsdom's CSS parser (the frame uses CSS.supports). */
const isColor = (value: string) => {
  const style = document.createElement('div').style;
  style.setProperty('color', value);
  return style.getPropertyValue('color') !== '';
};

let root: HTMLElement;
let sent: Extract<FrameToWorker, { t: 'event' }>[];
let surface: Surface;
const make = (limits: SurfaceLimits = DEFAULT_LIMITS) => new Surface(root, (message) => sent.push(message), isColor, limits);

beforeEach(() => {
  root = document.createElement('div');
  document.body.append(root);
  sent = [];
  surface = make();
});
afterEach(() => root.remove());

let nextId = 1;
const el = (tag: string, props: Record<string, unknown> = {}, children: WireNode[] = []): WireNode => ({ id: nextId++, tag, props: props as never, children });
const text = (value: string): WireNode => ({ id: nextId++, text: value });
const insert = (node: WireNode, parent = 0): Op => ({ op: 'insert', parent, before: null, node });

/** Every attribute value and style text in the surface. */
const everything = () => [...root.querySelectorAll('*')].flatMap((element) => [...element.attributes].map((attribute) => `${element.localName} ${attribute.name}=${attribute.value}`));

describe('what the surface draws', () => {
  it('draws allowlisted elements, attributes and text', () => {
    surface.apply([
      insert(
        el('div', { className: 'w-card', role: 'group', 'aria-label': 'Box', 'data-row': 3, title: 'T' }, [
          el('label', { htmlFor: 'f' }, [text('Name')]),
          el('input', { id: 'f', type: 'text', placeholder: 'you', maxLength: 20, required: true, disabled: false }),
          el('svg', { width: 10, height: 10, viewBox: '0 0 10 10' }, [el('circle', { cx: 5, cy: 5, r: 4, fill: '#f00', stroke: 'currentColor', strokeWidth: 2 })]),
        ]),
      ),
    ]);
    const box = root.querySelector('div')!;
    expect([...box.attributes].map((attribute) => `${attribute.name}=${attribute.value}`).sort()).toEqual(['aria-label=Box', 'class=w-card', 'data-row=3', 'role=group', 'title=T']);
    expect(root.querySelector('label')!.getAttribute('for')).toBe('f');
    const input = root.querySelector('input')!;
    expect([input.type, input.placeholder, input.maxLength, input.required, input.disabled]).toEqual(['text', 'you', 20, true, false]);
    const circle = root.querySelector('circle')!;
    expect(circle.namespaceURI).toBe('http://www.w3.org/2000/svg');
    expect(['cx', 'cy', 'r', 'fill', 'stroke', 'stroke-width'].map((name) => circle.getAttribute(name))).toEqual(['5', '5', '4', '#f00', 'currentColor', '2']);
    expect(surface.size).toBe(6);
  });

  it('refuses every element that loads, embeds or navigates, with its children', () => {
    const refused = ['a', 'img', 'iframe', 'frame', 'meta', 'link', 'object', 'embed', 'base', 'script', 'style', 'video', 'audio', 'source', 'picture', 'canvas', 'template', 'foreignObject', 'image', 'use', 'feImage'];
    surface.apply(refused.map((tag) => insert(el(tag, { src: 'http://x.test/', href: 'http://x.test/' }, [text(`inside ${tag}`)]))));
    surface.apply([insert(el('svg', {}, [el('image', { href: 'http://x.test/i.png' }), el('use', { href: 'http://x.test/u.svg#a' }), el('foreignObject', {}, [el('div')])]))]);
    expect(root.innerHTML).toBe('<svg></svg>');
  });

  it('drops attributes that name a URL or run code, on any element', () => {
    surface.apply([
      insert(
        el('form', { action: 'http://x.test/f', method: 'post', target: '_top', onsubmit: 'alert(1)' }, [
          el('button', { type: 'submit', formAction: 'http://x.test/b', formaction: 'http://x.test/b', onclick: 'alert(1)' }, [text('go')]),
          el('input', { type: 'image', src: 'http://x.test/i.png', srcSet: 'http://x.test/i.png 2x', formAction: 'http://x.test/i' }),
          el('input', { type: 'file' }),
          el('div', { href: 'http://x.test/', src: 'http://x.test/', ping: 'http://x.test/', download: 'x', srcset: 'http://x.test/ 2x', background: 'http://x.test/b.png', poster: 'http://x.test/p', xmlns: 'http://x.test/', dangerouslySetInnerHTML: '<img src=x>' }),
          el('table', { background: 'http://x.test/t.png' }, [el('tbody', {}, [el('tr', {}, [el('td', { background: 'http://x.test/c.png', colSpan: 2 })])])]),
        ]),
      ),
      insert(el('svg', { onload: 'alert(1)' }, [el('path', { d: 'M0 0 L10 10 Z', fill: 'url(http://x.test/p.svg#a)', stroke: 'url(#local)', filter: 'url(http://x.test/f.svg#f)', mask: 'url(http://x.test/m.svg#m)', clipPath: 'url(http://x.test/c.svg#c)', markerEnd: 'url(http://x.test/k.svg#k)', transform: 'url(http://x.test/)' })])),
    ]);
    expect(everything()).toEqual(['button type=submit', 'td colspan=2', 'path d=M0 0 L10 10 Z']);
    // an input type that loads or reads files is not one a component may choose
    const [image, file] = root.querySelectorAll('input');
    expect([image.type, file.type]).toEqual(['text', 'text']);
  });

  it('sets only allowlisted style properties, and no value that loads anything', () => {
    surface.apply([
      insert(
        el('div', {
          style: {
            color: 'teal',
            backgroundColor: 'rgb(1, 2, 3)',
            padding: 8,
            opacity: 0.5,
            cursor: 'pointer',
            backgroundImage: 'url(http://x.test/a.png)',
            background: 'url(http://x.test/b.png)',
            listStyleImage: 'url(http://x.test/c.png)',
            listStyle: 'url(http://x.test/d.png)',
            borderImage: 'url(http://x.test/e.png) 30',
            borderImageSource: 'url(http://x.test/f.png)',
            content: 'url(http://x.test/g.png)',
            filter: 'url(http://x.test/h.svg#f)',
            maskImage: 'url(http://x.test/i.png)',
            clipPath: 'url(http://x.test/j.svg#c)',
            shapeOutside: 'url(http://x.test/k.png)',
            '--custom': 'url(http://x.test/l.png)',
            fill: 'url(http://x.test/m.svg#p)',
            accentColor: 'image-set("http://x.test/n.png" 1x)',
            borderColor: 'url(http://x.test/o.png)',
            listStyleType: 'symbols(cyclic url(http://x.test/p.png))',
          },
        }),
      ),
      insert(el('span', { style: { cursor: 'url(http://x.test/q.cur), auto' } })),
      insert(el('span', { style: 'background: url(http://x.test/r.png)' })),
    ]);
    const [div, span, stringStyled] = root.children as unknown as HTMLElement[];
    expect(div.getAttribute('style')).toBe('color: teal; background-color: rgb(1, 2, 3); padding: 8px; opacity: 0.5; cursor: pointer;');
    expect(span.getAttribute('style') ?? '').toBe('');
    expect(stringStyled.getAttribute('style') ?? '').toBe('');
  });

  it('draws no value that var(), env(), attr() or an escape could change after the check (issue 33, item 11)', () => {
    // a parser that accepts var() as a colour, as Chromium's CSS.supports does
    const lenient = (value: string) => isColor(value) || /^var\(/i.test(value);
    surface = new Surface(root, (message) => sent.push(message), lenient);
    surface.apply([
      insert(
        el('svg', {}, [
          el('rect', { fill: 'var(--a, url(http://x.test/p.svg#a))', stroke: 'VAR(--b, red)', fontFamily: 'var(--c)', style: { fill: 'var(--d, red)', stroke: 'v\\61r(--e, red)' } }),
          el('rect', { fill: 'red', stroke: 'blue', style: { fill: 'green' } }),
        ]),
      ),
      insert(el('p', { style: { color: 'var(--f, red)', backgroundColor: 'env(safe-area-inset-top, red)', width: 'attr(data-w px)', padding: 'calc(var(--g) * 2)', margin: 4 } })),
    ]);
    const [substituted, plain] = root.querySelectorAll('rect');
    expect([...substituted.attributes].filter((attribute) => attribute.value).map((attribute) => attribute.name)).toEqual([]);
    expect([plain.getAttribute('fill'), plain.getAttribute('stroke'), plain.getAttribute('style')]).toEqual(['red', 'blue', 'fill: green;']);
    expect(root.querySelector('p')!.getAttribute('style')).toBe('margin: 4px;');
  });

  it('updates and removes props, and forgets removed subtrees', () => {
    const box = el('div', { className: 'a', style: { color: 'red', padding: 4 } }, [text('one')]);
    surface.apply([insert(box)]);
    surface.apply([{ op: 'props', id: box.id, set: { title: 'now', style: { color: 'blue' }, href: 'http://x.test/' }, unset: ['className'] }]);
    const div = root.querySelector('div')!;
    expect([div.getAttribute('class'), div.getAttribute('title'), div.getAttribute('style'), div.getAttribute('href')]).toEqual([null, 'now', 'color: blue;', null]);
    surface.apply([{ op: 'text', id: (box as { children: WireNode[] }).children[0].id, text: 'two' }]);
    expect(div.textContent).toBe('two');
    surface.apply([{ op: 'remove', parent: 0, id: box.id }]);
    expect([root.innerHTML, surface.size]).toEqual(['', 0]);
    // the removed ids are gone: ops on them do nothing
    surface.apply([{ op: 'props', id: box.id, set: { title: 'ghost' }, unset: [] }, insert(text('child of ghost'), box.id)]);
    expect(root.innerHTML).toBe('');
  });

  it('hides and shows again (a suspended subtree), keeping the element’s own display', () => {
    const box = el('div', { style: { display: 'flex', color: 'red' } }, [text('box')]);
    const words = text('words');
    surface.apply([insert(box), insert(words)]);
    surface.apply([
      { op: 'hide', id: box.id },
      { op: 'hide', id: words.id },
    ]);
    const div = root.querySelector('div')!;
    expect([div.style.getPropertyValue('display'), div.style.getPropertyPriority('display'), root.textContent]).toEqual(['none', 'important', 'box']);
    // a style update while hidden stays hidden
    surface.apply([{ op: 'props', id: box.id, set: { style: { display: 'grid', color: 'blue' } }, unset: [] }]);
    expect(div.style.getPropertyValue('display')).toBe('none');
    surface.apply([
      { op: 'unhide', id: box.id },
      { op: 'unhide', id: words.id },
    ]);
    expect([div.style.getPropertyValue('display'), div.style.getPropertyValue('color'), root.textContent]).toEqual(['grid', 'blue', 'boxwords']);
  });

  it('ignores malformed ops, reused ids and moves to another parent', () => {
    const a = el('div', {}, [el('span')]);
    const b = el('p');
    surface.apply([insert(a), insert(b)]);
    const span = (a as { children: WireNode[] }).children[0];
    surface.apply([
      null,
      'insert',
      { op: 'insert', parent: 0, before: null, node: { id: a.id, tag: 'section', props: {}, children: [] } },
      { op: 'insert', parent: 0, before: null, node: { id: 0, tag: 'section', props: {}, children: [] } },
      { op: 'move', parent: b.id, id: span.id, before: null },
      { op: 'move', parent: 0, id: 0, before: null },
      { op: 'remove', parent: 0, id: span.id },
      { op: 'props', id: 0, set: { className: 'root' }, unset: [] },
      { op: 'clear', extra: true },
    ] as unknown as Op[]);
    expect(root.innerHTML).toBe('');
    surface.apply([insert(el('div', {}, [text('fresh')]))]);
    expect(root.innerHTML).toBe('<div>fresh</div>');
  });

  it('moves keyed children within their parent and inserts before a sibling', () => {
    const list = el('ul', {}, [el('li', {}, [text('1')]), el('li', {}, [text('2')])]);
    surface.apply([insert(list)]);
    const [first, second] = (list as { children: WireNode[] }).children;
    surface.apply([{ op: 'move', parent: list.id, id: second.id, before: first.id }]);
    surface.apply([{ op: 'insert', parent: list.id, before: first.id, node: el('li', {}, [text('new')]) }]);
    expect(root.querySelector('ul')!.textContent).toBe('2new1');
  });
});

describe('the limits', () => {
  it('stops at the node cap', () => {
    surface = make({ ...DEFAULT_LIMITS, maxNodes: 10 });
    surface.apply([insert(el('div', {}, Array.from({ length: 5 }, () => text('x'))))]);
    expect(() => surface.apply([insert(el('div', {}, Array.from({ length: 10 }, () => text('y'))))])).toThrow(/more than 10 elements/);
    expect(surface.failed).toMatch(/more than 10/);
    // a stopped surface draws nothing more
    surface.apply([insert(el('p'))]);
    expect(root.querySelector('p')).toBeNull();
  });

  it('stops at the depth cap', () => {
    surface = make({ ...DEFAULT_LIMITS, maxDepth: 5 });
    let node = el('span');
    for (let depth = 0; depth < 6; depth++) node = el('div', {}, [node]);
    expect(() => surface.apply([insert(node)])).toThrow(/more than 5 deep/);
  });

  it('cuts text and drops values over their caps', () => {
    surface = make({ ...DEFAULT_LIMITS, maxTextChars: 5, maxValueChars: 8 });
    surface.apply([insert(el('p', { title: 'x'.repeat(9), className: 'short', style: { color: 'rgb(1, 2, 3)' } }, [text('abcdefgh')]))]);
    const p = root.querySelector('p')!;
    expect([p.textContent, p.getAttribute('title'), p.getAttribute('class'), p.getAttribute('style') ?? '']).toEqual(['abcde', null, 'short', '']);
  });
});

describe('events and controlled fields', () => {
  it('sends one event with the path of listeners from the target up', () => {
    const button = el('button', { $on: ['onClick'] }, [el('span', {}, [text('go')])]);
    const outer = el('div', { $on: ['onClick', 'onNotAnEvent'] }, [el('div', {}, [button])]);
    surface.apply([insert(outer)]);
    root.querySelector('span')!.click();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ t: 'event', seq: 1, type: 'click', path: [button.id, outer.id] });
    // nothing listens: nothing is sent
    surface.apply([insert(el('p', {}, [text('quiet')]))]);
    root.querySelector('p')!.click();
    expect(sent).toHaveLength(1);
  });

  it('submits for the person (the sandbox blocks forms): a submit button, or Enter in a field', () => {
    const form = el('form', { $on: ['onSubmit'] }, [
      el('input', { name: 'city', defaultValue: 'Lisbon' }),
      el('input', { name: 'ok', type: 'checkbox', defaultChecked: true }),
      el('select', { name: 'tags', multiple: true, value: ['a', 'c'] }, ['a', 'b', 'c'].map((value) => el('option', { value }, [text(value)]))),
      el('button', { type: 'submit', name: 'go' }, [text('send')]),
      el('button', { type: 'button' }, [text('other')]),
    ]);
    surface.apply([insert(form)]);
    const submitted = () => sent.filter((message) => message.type === 'submit');
    const [send, other] = root.querySelectorAll('button');
    other.click();
    expect(submitted()).toEqual([]);
    send.click();
    expect(submitted()).toHaveLength(1);
    expect(submitted()[0]).toMatchObject({ path: [form.id], target: { id: form.id }, data: { formData: { city: 'Lisbon', ok: 'on', tags: ['a', 'c'] } } });
    root.querySelector('input')!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(submitted()).toHaveLength(2);
    // a native submission, were one to happen, is prevented
    const native = new Event('submit', { bubbles: true, cancelable: true });
    root.querySelector('form')!.dispatchEvent(native);
    expect([native.defaultPrevented, submitted().length]).toEqual([true, 2]);
  });

  it('does not submit a form whose fields are invalid', () => {
    surface.apply([insert(el('form', { $on: ['onSubmit'] }, [el('input', { name: 'city', required: true }), el('button', { type: 'submit' }, [text('send')])]))]);
    root.querySelector('button')!.click();
    expect(sent).toEqual([]);
  });

  it('keeps what the person typed until the worker catches up, then takes its value', () => {
    const field = el('input', { value: '', $on: ['onChange'] });
    surface.apply([insert(field)]);
    const input = root.querySelector('input')!;
    input.focus();
    const type = (value: string) => {
      input.value = value;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    };
    type('a');
    type('ab');
    expect(sent.map((message) => [message.seq, message.target.value])).toEqual([
      [1, 'a'],
      [2, 'ab'],
    ]);
    // the worker's answer to the first event arrives while the second is on its way
    surface.apply([{ op: 'props', id: field.id, set: { value: 'A' }, unset: [] }]);
    surface.ack(1);
    expect(input.value).toBe('ab');
    surface.apply([{ op: 'props', id: field.id, set: { value: 'AB' }, unset: [] }]);
    surface.ack(2);
    expect(input.value).toBe('AB');
    // a value the worker keeps (it refused the edit) is restored once it has answered
    type('ABx');
    surface.ack(3);
    expect(input.value).toBe('AB');
  });

  it('restores a controlled checkbox nobody listens to', async () => {
    surface.apply([insert(el('input', { type: 'checkbox', checked: true }))]);
    const box = root.querySelector('input')!;
    box.click();
    await Promise.resolve();
    expect(box.checked).toBe(true);
    expect(sent).toEqual([]);
  });

  it('sets a select’s value after its options, and a multiple select’s selection', () => {
    surface.apply([
      insert(el('select', { value: 'b' }, [el('option', { value: 'a' }, [text('A')]), el('option', { value: 'b' }, [text('B')])])),
      insert(el('select', { multiple: true, value: ['x', 'z'] }, ['x', 'y', 'z'].map((value) => el('option', { value }, [text(value)])))),
    ]);
    const [single, multiple] = root.querySelectorAll('select');
    expect(single.value).toBe('b');
    expect([...multiple.selectedOptions].map((option) => option.value)).toEqual(['x', 'z']);
  });

  it('does for a ref only what a handle may: focus, blur, scroll, select', () => {
    surface = new Surface(root, (message) => sent.push(message), isColor, DEFAULT_LIMITS, () => true);
    const field = el('input', { defaultValue: 'hello' });
    surface.apply([insert(field)]);
    const input = root.querySelector('input')!;
    surface.call(field.id, 'focus');
    expect(document.activeElement).toBe(input);
    surface.call(field.id, 'blur');
    expect(document.activeElement).not.toBe(input);
    for (const method of ['click', 'remove', 'submit', 'showPicker', 'requestFullscreen']) expect(() => surface.call(field.id, method)).not.toThrow();
    surface.call(0, 'focus');
    expect(root.isConnected && input.isConnected).toBe(true);
  });

  it("takes focus or selects only right after the person's gesture in the frame (issue 33, item 8)", () => {
    let acted = false;
    surface = new Surface(root, (message) => sent.push(message), isColor, DEFAULT_LIMITS, () => acted);
    const outside = document.createElement('textarea');
    document.body.append(outside);
    outside.value = 'Hello, ';
    outside.focus();
    const field = el('input', { defaultValue: 'hello' });
    surface.apply([insert(field)]);
    const input = root.querySelector('input')!;
    surface.call(field.id, 'focus');
    surface.call(field.id, 'select');
    expect(document.activeElement).toBe(outside);
    acted = true;
    surface.call(field.id, 'focus');
    expect(document.activeElement).toBe(input);
    outside.remove();
  });
});
