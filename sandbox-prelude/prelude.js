// Wright sandbox prelude: the script every fresh QuickJS context reads before its call (compiled
// once per worker to bytecode). Its value is what results.js may need after the agent's code ran,
// taken from the context's globals while nothing has touched them: an agent that replaces
// `Array.prototype.push` or `String` before it returns breaks nothing of how its result or its
// failure is reported. The engine keeps the array and hands it to results.js (see its header
// for the order).
//
// The rest of the run protocol is the engine's (engine.rs): it defines `args` and `input`, runs
// the code, watches its promise and turns the outcome into text, with QuickJS's own JSON (never
// the global `JSON`). What only some calls use is in parts, each a script whose value is a
// function the engine reads into a context and calls only when its call needs it:
// - `console.js`, `state.js` and `fetch.js`, the globals `console`, `state` and `fetch`, read
//   before the code runs when the code names them (as the on-demand builtins are), handed the
//   host function they need (`log`, or `host`, which the engine checks — deadline, request
//   count — before anything leaves the worker); what else they use they take from the globals
//   then, untouched;
// - `results.js`, read after the code when a call failed or returned more than a primitive,
//   handed this array and QuickJS's JSON.stringify.
// Host globals that must not exist in the sandbox (`WeakRef`, `FinalizationRegistry`, whose
// callbacks could outlive a call; `SharedArrayBuffer`, `Atomics`) are never created: the
// engine's intrinsics leave them out (`Intrinsics`, `OnDemand` in engine.rs). `Map`, `Set`,
// `RegExp`, `Proxy` and `Date` exist only for code that names them, so no part uses them.
(function () {
  "use strict";
  return [
    String,
    Error,
    TypeError,
    Array.isArray,
    Array.prototype.push,
    String.prototype.includes,
    Function.prototype.call.bind(Function.prototype.call),
  ];
})()
