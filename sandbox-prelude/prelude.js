// Wright sandbox prelude: evaluated in every fresh QuickJS context before agent code.
//
// A module whose default export is an `install(native)` function (a module, so that the engine
// can compile it once to bytecode and load that into every context instead of parsing it again). The engine calls it once per
// context with the host's native functions; it installs the agent-visible globals (`args`,
// `input`, `state`, `fetch`, `console`, `resolve`) and returns the private runner the engine
// drives. `native` never becomes a global, so agent code can reach the host only through the
// functions below, and every one of them goes through `native.host`, which the engine checks
// (deadline, request count) before anything leaves the worker.
//
// Everything the runner relies on is captured here, before agent code runs, so that an agent
// that replaces `JSON.stringify` or `Array.prototype.map` breaks only its own call (and the next
// call gets a fresh context anyway).
export default function install(native) {
  "use strict";
  const G = globalThis;
  const hostCall = native.host;
  const hostLog = native.log;
  const loadFetch = native.loadFetch;
  const jsonStringify = JSON.stringify;
  const jsonParse = JSON.parse;
  const StringCtor = String;
  const ObjectCtor = Object;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const MapCtor = Map;
  const arrayIsArray = Array.isArray;
  const objectKeys = Object.keys;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapHas = Map.prototype.has;
  const arrayJoin = Array.prototype.join;
  const arrayPush = Array.prototype.push;
  const promiseThen = Promise.prototype.then;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const iteratorSymbol = Symbol.iterator;
  // Host globals that must not exist in the sandbox (`WeakRef`, `FinalizationRegistry`, whose
  // callbacks could outlive a call; `SharedArrayBuffer`, `Atomics`) are never created: the
  // engine's intrinsics leave them out (`Intrinsics`, `add_typed_arrays` in engine.rs).


  // One request to the host: JSON in, JSON out. `native.host` throws an Error with the host's
  // message when the host refuses (limit reached, deadline passed, key missing a value ...).
  function request(op, payload) {
    const reply = hostCall(op, jsonStringify(payload));
    return reply === undefined || reply === "" ? undefined : jsonParse(reply);
  }

  // ---- console: formatted here, captured (and capped) by the host ----
  function formatOne(value) {
    if (typeof value === "string") return value;
    if (value instanceof ErrorCtor) return value.stack ? `${value.name}: ${value.message}\n${value.stack}` : `${value.name}: ${value.message}`;
    if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") {
      return StringCtor(value);
    }
    try {
      const text = jsonStringify(value);
      return text === undefined ? StringCtor(value) : text;
    } catch (_error) {
      return StringCtor(value); // cycles and the like: still log something
    }
  }
  function logger(level) {
    return function (...values) {
      const parts = [];
      for (const value of values) call(arrayPush, parts, formatOne(value));
      hostLog(level, call(arrayJoin, parts, " "));
    };
  }
  const consoleObject = {
    log: logger("log"),
    info: logger("info"),
    warn: logger("warn"),
    error: logger("error"),
    debug: logger("debug"),
  };

  // ---- state: the agent's key-value store, behind the host ----
  function checkKey(key) {
    if (typeof key !== "string" || key.length === 0) throw new TypeErrorCtor("state keys are non-empty strings");
    return key;
  }
  const stateObject = {
    async get(key) {
      const value = request("state_get", { key: checkKey(key) });
      return value === undefined ? null : value;
    },
    async set(key, value) {
      checkKey(key);
      const text = jsonStringify(value === undefined ? null : value);
      if (text === undefined) throw new TypeErrorCtor("state.set: the value must be JSON");
      request("state_set", { key, value: jsonParse(text) });
    },
    async delete(key) {
      return request("state_delete", { key: checkKey(key) }) === true;
    },
    async list(prefix) {
      return request("state_list", { prefix: prefix === undefined || prefix === null ? null : StringCtor(prefix) });
    },
  };

  // ---- fetch: the host performs the request through the egress guard ----
  // Its implementation (`fetch.js`) is loaded into the context on the first call: reading it
  // into every context cost about a tenth of making one, and a fetch costs milliseconds anyway.
  // It is handed what it uses, captured here, so that nothing the code changed before its first
  // fetch reaches it.
  let fetchImplementation;
  async function fetchFunction(resource, init) {
    if (fetchImplementation === undefined) {
      fetchImplementation = loadFetch()({
        request,
        jsonStringify,
        jsonParse,
        StringCtor,
        TypeErrorCtor,
        MapCtor,
        mapGet,
        mapSet,
        mapHas,
        arrayIsArray,
        objectKeys,
        freeze,
        arrayPush,
        call,
        iteratorSymbol,
      });
    }
    return fetchImplementation(resource, init);
  }

  // ---- the run protocol ----
  // 0 running, 1 settled with a value, 2 failed. `resolve(value)` or the code's `return value`
  // ends the call, whichever comes first. A body that returns nothing may still call `resolve`
  // from a promise callback, so the engine drains the job queue before it calls `finish`.
  let status = 0;
  let value;
  let failure;
  let returnedNothing = false;
  function settle(result) {
    if (status === 0) {
      status = 1;
      value = result;
    }
  }
  function fail(error) {
    if (status === 0) {
      status = 2;
      failure = error;
    }
  }

  function define(name, object) {
    defineProperty(G, name, { value: object, writable: true, configurable: true, enumerable: false });
  }
  define("console", consoleObject);
  define("state", stateObject);
  define("fetch", fetchFunction);
  define("resolve", function resolve(result) {
    settle(result);
  });
  // `args` and `input` exist from here (while the context is prepared, off the caller's path),
  // so that `start` only sets their values instead of adding two properties to the global
  // object during the call.
  define("args", undefined);
  define("input", undefined);

  // JSON result rules: undefined becomes null; a function, a symbol or a BigInt is an error that
  // names where it is (JSON.stringify would drop the first two silently); a cycle is an error.
  // The replacer sees every value after `toJSON`, with `this` the holder, so a path is kept per
  // holder. A shared (not cyclic) object may be named by either of its paths; that is fine.
  function toJson(result) {
    if (result === undefined) return "null";
    // A primitive has no path to name and cannot hold a cycle, a function, a symbol or a
    // BigInt: the replacer (and its Map) would only cost time.
    const kind = typeof result;
    if (result === null || kind === "string" || kind === "number" || kind === "boolean") return jsonStringify(result);
    const paths = new MapCtor();
    const replacer = function (key, item) {
      const holderPath = call(mapGet, paths, this);
      const path = holderPath === undefined ? "result" : arrayIsArray(this) ? `${holderPath}[${key}]` : `${holderPath}.${key}`;
      const kind = typeof item;
      if (kind === "function") throw new TypeErrorCtor(`the result is not JSON: ${path} is a function`);
      if (kind === "symbol") throw new TypeErrorCtor(`the result is not JSON: ${path} is a symbol`);
      if (kind === "bigint") throw new TypeErrorCtor(`the result is not JSON: ${path} is a BigInt`);
      if (item !== null && kind === "object") call(mapSet, paths, item, path);
      return item;
    };
    let text;
    try {
      text = jsonStringify(result, replacer);
    } catch (error) {
      if (error instanceof TypeErrorCtor && /circular/i.test(error.message)) {
        throw new TypeErrorCtor("the result is not JSON: it contains a cycle (an object that contains itself)");
      }
      throw error;
    }
    return text === undefined ? "null" : text;
  }

  function describe(error) {
    if (error === null) return { name: "null", message: "null", stack: "" };
    if (error instanceof ErrorCtor || (error && typeof error === "object" && "message" in error)) {
      let stack = "";
      try {
        stack = typeof error.stack === "string" ? error.stack : "";
      } catch (_ignored) {}
      return { name: StringCtor(error.name || "Error"), message: StringCtor(error.message), stack };
    }
    let message;
    try {
      message = typeof error === "string" ? error : formatOne(error);
    } catch (_ignored) {
      message = "a value that cannot be shown";
    }
    return { name: "Thrown", message: `uncaught ${typeof error}: ${message}`, stack: "" };
  }

  return {
    // `code` is the compiled `async function () { BODY }`.
    start(code, argsJson, input) {
      define("args", argsJson === undefined ? {} : jsonParse(argsJson));
      define("input", input);
      let promise;
      try {
        promise = code();
      } catch (error) {
        fail(error);
        return;
      }
      call(
        promiseThen,
        promise,
        (result) => {
          if (result === undefined) returnedNothing = true;
          else settle(result);
        },
        (error) => fail(error),
      );
    },
    status() {
      return status;
    },
    // Called once the job queue is drained or the call has settled. Returns
    // [true, jsonText] or [false, name, message, stack].
    finish() {
      if (status === 0) {
        if (returnedNothing) settle(undefined);
        else fail(new ErrorCtor("the code never finished: it awaits a promise that nothing can settle (no timers or events exist in the sandbox)"));
      }
      if (status === 2) {
        const { name, message, stack } = describe(failure);
        return [false, name, message, stack];
      }
      try {
        return [true, toJson(value)];
      } catch (error) {
        const { name, message, stack } = describe(error);
        return [false, name, message, stack];
      }
    },
  };
}
