// Wright sandbox prelude: evaluated in every fresh QuickJS context before agent code.
//
// A script whose value is an `install(load)` function (compiled once per worker to bytecode,
// which every context then reads instead of parsing the source again). The engine calls it once
// per context; it installs the agent-visible globals and returns the private runner the engine
// drives. `load` never becomes a global.
//
// Reading bytecode into a context costs by the function, and a context is made for every call,
// so what only some calls use lives in parts, each a script whose value is a function that the
// engine's `load(part, captured)` reads into the context and calls with the host function the
// part needs (or with `captured`): `console.js`, `state.js`, `fetch.js` and `resolve`, read
// before the code runs when the code names them (the engine decides, as for its on-demand
// builtins), and `results.js`, read after the code when a call fails or returns more than a
// primitive. Agent code reaches the host only through those parts, and every host function goes
// through the engine's checks (deadline, request count) before anything leaves the worker.
//
// What runs after agent code relies only on what was captured here, before it ran, so that an
// agent that replaces `JSON.stringify` or `Array.prototype.push` breaks only its own call (and
// the next call gets a fresh context anyway); the parts read before the code take what they use
// from the globals then, untouched. Host globals that must not exist in the sandbox (`WeakRef`,
// `FinalizationRegistry`, whose callbacks could outlive a call; `SharedArrayBuffer`, `Atomics`)
// are never created: the engine's intrinsics leave them out (`Intrinsics`, `OnDemand` in
// engine.rs). `Map`, `Set`, `RegExp`, `Proxy` and `Date` exist only for code that names them, so
// nothing here or in the parts uses them.
(function install(load) {
  "use strict";
  const G = globalThis;
  const jsonStringify = JSON.stringify;
  const jsonParse = JSON.parse;
  const defineProperty = Object.defineProperty;
  const promiseThen = Promise.prototype.then;
  const call = Function.prototype.call.bind(Function.prototype.call);
  // What results.js is handed (see its header for the order).
  const captured = [jsonStringify, call, String, Error, TypeError, Array.isArray, Array.prototype.push, String.prototype.includes];
  let results;
  function resultsPart() {
    if (results === undefined) results = load("results", captured);
    return results;
  }

  // ---- the run protocol ----
  // 0 running, 1 settled with a value, 2 failed. `resolve(value)` or the code's `return value`
  // ends the call, whichever comes first. A body that returns nothing may still call `resolve`
  // from a promise callback, so the engine drains the job queue before it calls `finish`.
  let status = 0;
  let value;
  let failure;
  let returnedNothing = false;
  function define(name, object) {
    defineProperty(G, name, { value: object, writable: true, configurable: true, enumerable: false });
  }
  // `args` and `input` exist from here (while the context is prepared, off the caller's path),
  // so that `start` only sets their values instead of adding two properties to the global
  // object during the call.
  define("args", undefined);
  define("input", undefined);
  function failed(error) {
    const described = resultsPart().describe(error);
    return [false, described.name, described.message, described.stack];
  }

  return {
    // `code` is the compiled `async function () { BODY }`; `parts` names the globals it names
    // among `console`, `state`, `fetch` and `resolve`.
    start(code, argsJson, input, parts) {
      for (let i = 0; i < parts.length; i++) {
        const name = parts[i];
        if (name === "resolve") {
          define(name, function resolve(result) {
            if (status === 0) {
              status = 1;
              value = result;
            }
          });
        } else {
          define(name, name === "console" ? load(name, resultsPart()) : load(name));
        }
      }
      define("args", argsJson === undefined ? {} : jsonParse(argsJson));
      define("input", input);
      let promise;
      try {
        promise = code();
      } catch (error) {
        status = 2;
        failure = error;
        return;
      }
      call(
        promiseThen,
        promise,
        (result) => {
          if (result === undefined) returnedNothing = true;
          else if (status === 0) {
            status = 1;
            value = result;
          }
        },
        (error) => {
          if (status === 0) {
            status = 2;
            failure = error;
          }
        },
      );
    },
    status() {
      return status;
    },
    // Called once the job queue is drained or the call has settled. Returns
    // [true, jsonText] or [false, name, message, stack].
    finish() {
      if (status === 0) {
        if (!returnedNothing) {
          return failed(new captured[3]("the code never finished: it awaits a promise that nothing can settle (no timers or events exist in the sandbox)"));
        }
        status = 1;
      }
      if (status === 2) return failed(failure);
      // A primitive has no path to name and cannot hold a cycle, a function, a symbol or a
      // BigInt: it needs none of results.js.
      const kind = typeof value;
      if (value === undefined) return [true, "null"];
      if (value === null || kind === "string" || kind === "number" || kind === "boolean") return [true, jsonStringify(value)];
      try {
        return [true, resultsPart().toJson(value)];
      } catch (error) {
        return failed(error);
      }
    },
  };
})
