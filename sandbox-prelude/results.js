// Wright sandbox prelude, the part that turns values into text: a call's result as JSON, a
// failure as name, message and stack, and any value as a log line (for console.js). Read into a
// context by the engine after the code ran, when the call failed or returned more than a
// primitive (or before, for console.js). It reads no global: it uses what prelude.js captured
// before the code ran, handed over as an array (indexed, not destructured: destructuring calls
// the array's iterator, which the code may have replaced), and `jsonStringify`, QuickJS's own
// JSON.stringify. A script whose value is a function of those two.
(function (captured, jsonStringify) {
  "use strict";
  const StringCtor = captured[0];
  const ErrorCtor = captured[1];
  const TypeErrorCtor = captured[2];
  const arrayIsArray = captured[3];
  const arrayPush = captured[4];
  const stringIncludes = captured[5];
  const call = captured[6];

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

  // JSON result rules: undefined becomes null; a function, a symbol or a BigInt is an error that
  // names where it is (JSON.stringify would drop the first two silently); a cycle is an error.
  // The replacer sees every value after `toJSON`, with `this` the holder. JSON.stringify writes
  // depth first, so the holder is always on the stack of objects being written, and whatever
  // lies above it there is done: the stack gives each holder's path. A shared (not cyclic)
  // object is named by the path it is written under.
  function toJson(result) {
    const holders = [];
    const paths = [];
    const replacer = function (key, item) {
      let depth = holders.length;
      while (depth > 0 && holders[depth - 1] !== this) depth--;
      holders.length = depth;
      paths.length = depth;
      const path = depth === 0 ? "result" : arrayIsArray(this) ? `${paths[depth - 1]}[${key}]` : `${paths[depth - 1]}.${key}`;
      const kind = typeof item;
      if (kind === "function") throw new TypeErrorCtor(`the result is not JSON: ${path} is a function`);
      if (kind === "symbol") throw new TypeErrorCtor(`the result is not JSON: ${path} is a symbol`);
      if (kind === "bigint") throw new TypeErrorCtor(`the result is not JSON: ${path} is a BigInt`);
      if (item !== null && kind === "object") {
        call(arrayPush, holders, item);
        call(arrayPush, paths, path);
      }
      return item;
    };
    let text;
    try {
      text = jsonStringify(result, replacer);
    } catch (error) {
      if (error instanceof TypeErrorCtor && call(stringIncludes, StringCtor(error.message), "circular")) {
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

  return { formatOne, toJson, describe };
})
