// Wright sandbox prelude, the part behind `state`, the agent's key-value store kept by the host:
// read into the context of code that names `state`, before the code runs (the engine decides, as for its builtins). A
// script whose value is a function of the host's `request(op, payload) -> reply`, which throws
// an Error with the host's message when the host refuses (limit reached, deadline passed ...);
// what else it uses it takes from the globals while the code has not run yet.
(function (request) {
  "use strict";
  const jsonStringify = JSON.stringify;
  const jsonParse = JSON.parse;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;
  function checkKey(key) {
    if (typeof key !== "string" || key.length === 0) throw new TypeErrorCtor("state keys are non-empty strings");
    return key;
  }
  return {
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
})
