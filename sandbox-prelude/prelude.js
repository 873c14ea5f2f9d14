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

  // Host globals that must not exist in the sandbox, or whose callbacks could outlive a call.
  for (const name of ["FinalizationRegistry", "WeakRef", "Atomics", "SharedArrayBuffer"]) {
    delete G[name];
  }

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
  function makeHeaders(pairs) {
    // Lower-cased names; repeated headers joined with ", " as the Fetch standard does.
    const map = new MapCtor();
    for (const [name, value] of pairs) {
      const key = StringCtor(name).toLowerCase();
      call(mapSet, map, key, call(mapHas, map, key) ? `${call(mapGet, map, key)}, ${value}` : StringCtor(value));
    }
    return freeze({
      get(name) {
        const value = call(mapGet, map, StringCtor(name).toLowerCase());
        return value === undefined ? null : value;
      },
      has(name) {
        return call(mapHas, map, StringCtor(name).toLowerCase());
      },
      forEach(callback) {
        for (const [name, value] of map) callback(value, name);
      },
      entries() {
        return map.entries();
      },
      keys() {
        return map.keys();
      },
      [Symbol.iterator]() {
        return map.entries();
      },
    });
  }
  function headerPairs(headers) {
    if (headers === undefined || headers === null) return [];
    if (arrayIsArray(headers)) return headers.map((pair) => [StringCtor(pair[0]), StringCtor(pair[1])]);
    if (typeof headers.forEach === "function" && typeof headers.get === "function") {
      const pairs = [];
      headers.forEach((value, name) => call(arrayPush, pairs, [StringCtor(name), StringCtor(value)]));
      return pairs;
    }
    return objectKeys(headers).map((name) => [name, StringCtor(headers[name])]);
  }
  async function fetchFunction(resource, init) {
    const options = init === undefined || init === null ? {} : init;
    let pairs = headerPairs(options.headers);
    let body = options.body;
    if (body !== undefined && body !== null && typeof body !== "string") {
      // A plain object is sent as JSON, the way agents usually mean it.
      body = jsonStringify(body);
      if (!pairs.some((pair) => pair[0].toLowerCase() === "content-type")) call(arrayPush, pairs, ["content-type", "application/json"]);
    }
    const response = request("fetch", {
      method: StringCtor(options.method === undefined ? "GET" : options.method).toUpperCase(),
      url: StringCtor(resource && typeof resource === "object" && "url" in resource ? resource.url : resource),
      headers: pairs,
      body: body === undefined || body === null ? null : body,
    });
    const text = response.body;
    let used = false;
    const consume = () => {
      if (used) throw new TypeErrorCtor("the response body was already read");
      used = true;
      return text;
    };
    return freeze({
      status: response.status,
      statusText: response.status_text || "",
      ok: response.status >= 200 && response.status <= 299,
      url: response.url,
      redirected: response.redirected === true,
      headers: makeHeaders(response.headers),
      async text() {
        return consume();
      },
      async json() {
        return jsonParse(consume());
      },
    });
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
