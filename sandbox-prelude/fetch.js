// Wright sandbox prelude, the part behind `fetch`: read into the context of code that names
// `fetch`, before the code runs (the engine decides, as for its builtins); the host performs the
// request through the egress guard. A script whose value is a function of the host's
// `request(op, payload)`; what else it uses it takes from the globals while the code has not run
// yet, so nothing the code changes later reaches it.
(function (request) {
  "use strict";
  const jsonStringify = JSON.stringify;
  const jsonParse = JSON.parse;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;
  const arrayIsArray = Array.isArray;
  const objectKeys = Object.keys;
  const objectCreate = Object.create;
  const freeze = Object.freeze;
  const arrayPush = Array.prototype.push;
  const arrayValues = Array.prototype.values;
  const stringToLowerCase = String.prototype.toLowerCase;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const iteratorSymbol = Symbol.iterator;

  function makeHeaders(pairs) {
    // Lower-cased names, in the order they first came; repeated headers joined with ", " as the
    // Fetch standard does. A dictionary without a prototype (no `Map`: the context has one only
    // for code that names it), and the names in order beside it.
    const values = objectCreate(null);
    const names = [];
    for (const [name, value] of pairs) {
      const key = call(stringToLowerCase, StringCtor(name));
      if (values[key] === undefined) {
        call(arrayPush, names, key);
        values[key] = StringCtor(value);
      } else {
        values[key] = `${values[key]}, ${value}`;
      }
    }
    const lookup = (name) => values[call(stringToLowerCase, StringCtor(name))];
    const entries = () => {
      const list = [];
      for (const name of names) call(arrayPush, list, [name, values[name]]);
      return call(arrayValues, list);
    };
    return freeze({
      get(name) {
        const value = lookup(name);
        return value === undefined ? null : value;
      },
      has(name) {
        return lookup(name) !== undefined;
      },
      forEach(callback) {
        for (const name of names) callback(values[name], name);
      },
      entries,
      keys() {
        return call(arrayValues, [...names]);
      },
      [iteratorSymbol]: entries,
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
  return fetchFunction;
})
