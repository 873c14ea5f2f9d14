// Wright sandbox prelude, the part behind `console`: read into the context of code that names
// `console`, before the code runs (the engine decides, as for its on-demand builtins). Values
// are formatted here and captured, and capped, by the host's `log`. A script whose value is a
// function of `log`; what else it uses it takes from the globals while the code has not run yet,
// so nothing the code replaces later changes how it logs.
(function (hostLog) {
  "use strict";
  const jsonStringify = JSON.stringify;
  const StringCtor = String;
  const ErrorCtor = Error;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const arrayJoin = Array.prototype.join;
  const arrayPush = Array.prototype.push;
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
      for (let i = 0; i < values.length; i++) call(arrayPush, parts, formatOne(values[i]));
      hostLog(level, call(arrayJoin, parts, " "));
    };
  }
  return {
    log: logger("log"),
    info: logger("info"),
    warn: logger("warn"),
    error: logger("error"),
    debug: logger("debug"),
  };
})
