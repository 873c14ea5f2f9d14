// Wright sandbox prelude, the part behind `console`: read into the context of code that names
// `console`, before the code runs (see prelude.js). Values are formatted here (by results.js's
// `formatOne`) and captured, and capped, by the host's `log`. A script whose value is a function
// of the host's `log` and the results part; what else it uses it takes from the globals while
// the code has not run yet.
(function (hostLog, results) {
  "use strict";
  const formatOne = results.formatOne;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const arrayJoin = Array.prototype.join;
  const arrayPush = Array.prototype.push;
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
