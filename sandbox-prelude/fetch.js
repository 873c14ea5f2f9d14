// Wright sandbox prelude, the part behind `fetch`: loaded into a context by the prelude's `fetch`
// on its first call (see prelude.js). A script whose value is a function of what the prelude
// captured before any agent code ran; it reads no global, so nothing the code changed before
// its first fetch reaches it.
(function (captured) {
  "use strict";
  const {
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
  } = captured;

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
      [iteratorSymbol]() {
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
  return fetchFunction;
})
